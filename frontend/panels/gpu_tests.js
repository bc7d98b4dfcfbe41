// Per-GPU copies of one host, from GET /hosts/{host}/health (gpus[].tests), beside the pair
// matrix: host -> GPU (h2d) and GPU -> host (d2h) over each GPU's own PCIe link, and a copy
// within its memory (local), and where the probe runs it its all-to-all (a2a_ce, a2a_nccl:
// what it sent its peers with every GPU sending to every other at once). One row per GPU;
// each cell shows the measured figure and its ratio to what the PCIe link (all-to-all: the
// topology) offers, in its verdict's colour with the verdict's glyph (never
// colour alone); hovering shows figure, expected and its basis, baseline and the reason.
// A one-GPU host has no pair to measure: this table is its measured fabric.

import { GPU_TESTS, TEST_ABOUT, TEST_LABEL } from "../shared/api.js";
import { scrollBox } from "../shared/table.js";
import { h } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { verdictOf, VERDICTS } from "../shared/palette.js";

/** The hover text of one cell: what was measured, against what, and the verdict's reason. */
export function cellTitle(gpu, t) {
  const lines = [`GPU${gpu} ${t.test}: ${TEST_ABOUT[t.test] || ""}`,
    t.error ? `failed: ${t.error}` : `measured ${fmt.bandwidth(t.value)}`];
  if (t.expected !== null && t.expected !== undefined) {
    lines.push(`expected ${fmt.bandwidth(t.expected)} (${t.expected_basis || "topology"}), ` +
      `ratio ${fmt.ratio(t.ratio_expected)}`);
  }
  if (t.baseline) lines.push(`baseline ${fmt.bandwidth(t.baseline)} (ratio ${fmt.ratio(t.ratio_baseline)})`);
  lines.push(`${verdictOf(t.verdict).glyph} ${t.verdict}: ${t.reason}`);
  if (t.measured_at) lines.push(`measured ${fmt.time(t.measured_at)}`);
  return lines.join("\n");
}

function cell(gpu, t) {
  if (!t) return h("td", { class: "muted" }, "–");
  const verdict = VERDICTS[t.verdict] ? t.verdict : "unknown";
  const figure = t.error ? "failed" : t.value === null || t.value === undefined ? "–"
    : fmt.bandwidth(t.value);
  const ratio = t.ratio_expected !== null && t.ratio_expected !== undefined
    ? h("span", { class: "muted" }, ` ${fmt.ratio(t.ratio_expected)}`) : null;
  return h("td", { class: `gpu-test v-${verdict}`, "data-gpu": String(gpu), "data-test": t.test,
    "data-verdict": verdict, title: cellTitle(gpu, t) },
  h("span", { class: "glyph", "aria-hidden": "true" }, verdictOf(verdict).glyph), ` ${figure}`, ratio);
}

/** The table, or null when no GPU of the host has per-GPU results (an older probe). */
export function gpuTestsTable(health) {
  const gpus = (health?.gpus || []).filter((g) => (g.tests || []).length);
  if (!gpus.length) return null;
  // only the tests some GPU of this host ran (the opt-in ones and all-to-all are not
  // everywhere): the GPU evidence stays in view at 1440 px beside the pair matrix
  const ran = new Set(gpus.flatMap((g) => g.tests.map((t) => t.test)));
  const tests = GPU_TESTS.filter((t) => ran.has(t));
  const head = h("tr", {}, h("th", {}, "GPU"),
    tests.map((t) => h("th", { title: TEST_ABOUT[t] },
      TEST_LABEL[t] && TEST_LABEL[t] !== t ? `${t} (${TEST_LABEL[t]})` : t)));
  const rows = gpus.map((g) => {
    const by = new Map(g.tests.map((t) => [t.test, t]));
    return h("tr", { "data-key": String(g.gpu) }, h("th", {}, `GPU${g.gpu}`),
      tests.map((name) => cell(g.gpu, by.get(name))));
  });
  return h("div", { class: "gpu-tests" },
    h("h3", {}, "Per GPU: PCIe, local copies and all-to-all ",
      h("span", { class: "muted" }, "GB/s, ratio to what its PCIe link (all-to-all: its topology) offers")),
    scrollBox("Per-GPU copies, scrolls sideways", h("table", { class: "grid", "aria-label": "Per-GPU copies" },
      h("thead", {}, head), h("tbody", {}, rows))));
}
