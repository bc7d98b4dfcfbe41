// Compare: #/compare?hosts=a,b,c&test=ce_write&pair=0-1&range=6h, one pair's history for one
// test on up to 8 hosts, overlaid (issue 40: what a Grafana user missed). The fleet page links
// here with the hosts its filter shows. Each host's series is GET /hosts/{host}/series, as on
// its own page; a host that has no such pair or does not exist is named in a notice.

import { api, TESTS, unitOf } from "../shared/api.js";
import { h, replace } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { baseLayout, OKABE_ITO, SERIES } from "../shared/palette.js";
import { hostHref } from "../shared/router.js";
import { draw, purge, windowTrace } from "../charts/plot.js";
import { rangeNotices, windowOf } from "../charts/timeline.js";

export const MAX_HOSTS = 8;
const COLOURS = SERIES.filter((c) => c !== OKABE_ITO.green); // green says "healthy" here

function parsePair(text) {
  const m = /^(\d+)-(\d+)$/.exec(text || "");
  return m ? [Number(m[1]), Number(m[2])] : [0, 1];
}

function figure(answers, since, until, unit) {
  const data = [windowTrace(since, until), ...answers.map(({ host, series }, i) => ({
    type: "scatter", mode: "lines", name: host, x: series.buckets.map((b) => b.start),
    y: series.buckets.map((b) => fmt.axisValue(b.mean, unit)),
    line: { color: COLOURS[i % COLOURS.length], width: 1.5 },
    hovertemplate: `${host.replace(/[<>&]/g, "")} %{y:.4g}<extra></extra>`,
  }))];
  const layout = baseLayout({ height: 420, hovermode: "x unified",
    xaxis: { type: "date" }, yaxis: { title: { text: fmt.axisUnit(unit) }, rangemode: "tozero" } });
  return { data, layout };
}

export function mount(root, route) {
  let params = route.params;
  const head = h("div", { class: "page-head" });
  const notices = h("div", { class: "notices", id: "compare-notices" });
  const chart = h("div", { class: "chart", id: "compare-chart", role: "figure",
    "aria-label": "One pair's history on several hosts, overlaid" });
  replace(root, head, notices, h("section", { class: "panel" }, chart));

  async function load() {
    const asked = (params.hosts || "").split(",").map((x) => x.trim()).filter(Boolean);
    const hosts = [...new Set(asked)].slice(0, MAX_HOSTS);
    const test = TESTS.includes(params.test) ? params.test : TESTS[0];
    const [src, dst] = parsePair(params.pair);
    const w = windowOf(params);
    const lines = rangeNotices(params);
    if (asked.length > MAX_HOSTS) lines.push(`At most ${MAX_HOSTS} hosts: showing the first ${MAX_HOSTS}.`);
    if (params.test && test !== params.test) lines.push(`There is no test "${params.test}"; showing ${test}.`);
    const answers = [];
    await Promise.all(hosts.map(async (host) => {
      try {
        answers.push({ host, series: await api.series(host, { src, dst, test, since: w.since, until: w.until }) });
      } catch (error) {
        if (!error.status) throw error;
        lines.push(`${host}: ${error.detail}`);
      }
    }));
    answers.sort((a, b) => hosts.indexOf(a.host) - hosts.indexOf(b.host));
    replace(head, h("h1", {}, `Compare ${fmt.pair(src, dst)} · ${test}`),
      answers.map(({ host }) => h("a", { class: "chip host", href: hostHref(host, { pair: `${src}-${dst}`, test }) }, host)));
    replace(notices, (hosts.length ? lines : ["Name the hosts: #/compare?hosts=a,b&test=ce_write&pair=0-1"])
      .map((t) => h("p", { class: "notice", role: "status" }, `⚠ ${t}`)));
    const f = figure(answers, w.since, w.until, unitOf(test));
    await draw(chart, f.data, f.layout);
  }

  return {
    refresh: load,
    async update(next) {
      params = next.params;
      await load();
    },
    title: () => `Compare · ${(params.hosts || "").split(",").filter(Boolean).length} hosts`,
    destroy() {
      purge(chart);
    },
  };
}
