// A GPU's own evidence in the host page's inventory: its clocks (held for power, heat or a HW
// slowdown? the newest sample's NVML clocks-event reasons), its GPUDirect RDMA readiness and
// what its driver says of it (recovery action, row remapping, ECC).

import { h } from "../shared/dom.js";

/** "power-capped · 449/450 W · SM 1742/1980 MHz", or the plain figures when free. */
export function clocksCell(c) {
  if (!c) return h("span", { class: "muted" }, "–");
  const figures = [];
  if (c.power_w !== null && c.power_limit_w) figures.push(`${Math.round(c.power_w)}/${Math.round(c.power_limit_w)} W`);
  if (c.temperature_c !== null) figures.push(`${c.temperature_c} C`);
  if (c.sm_clock_mhz !== null && c.sm_clock_max_mhz) figures.push(`SM ${c.sm_clock_mhz}/${c.sm_clock_max_mhz} MHz`);
  const title = `clocks-event reasons: ${c.reasons.join(", ") || "none"}`;
  if (!c.label) return h("span", { class: "muted", title }, figures.join(" · "));
  return h("span", { class: "warn throttled", title },
    `⚠ ${c.label}`, h("span", { class: "muted" }, ` · ${figures.join(" · ")}`));
}

/** The driver's own verdict: "ok", or its recovery action / row remap / uncorrected ECC;
 * every read on hover ("not supported" ones with the driver's reason). */
export function driverCell(d) {
  if (!d) return h("span", { class: "muted" }, "–");
  const remap = d.row_remap;
  const ecc = d.ecc;
  const lines = [
    `recovery action: ${d.recovery_action ?? "–"}`,
    remap && `row remap: ${remap.corrected_rows} corrected, ${remap.uncorrected_rows} uncorrected` +
      `${remap.pending ? ", pending" : ""}${remap.failure ? ", FAILED" : ""}`,
    ecc && `ECC volatile: ${ecc.volatile_corrected ?? "–"} corrected, ${ecc.volatile_uncorrected ?? "–"} uncorrected`,
    ...Object.entries(d.unread || {}).map(([k, why]) => `${k}: ${why}`),
  ].filter(Boolean);
  const words = [];
  if (d.recovery_action && d.recovery_action !== "none") words.push(d.recovery_action.toUpperCase());
  if (remap?.failure) words.push("remap failed");
  else if (remap?.pending) words.push("remap pending");
  if (ecc?.volatile_uncorrected) words.push("uncorrected ECC");
  if (!words.length) return h("span", { class: "muted", title: lines.join("\n") }, "ok");
  return h("span", { class: "warn", title: lines.join("\n"), "data-driver": "problem" },
    `⚠ ${words.join(" · ")}`);
}

const RDMA_WORDS = { ready: "ready", poor: "poor", not_ready: "not ready", unknown: "–" };

/** "ready" / "poor" / "not ready", the reason and action on hover. */
export function rdmaCell(r) {
  if (!r) return h("span", { class: "muted" }, "–");
  const title = [r.reason, r.action && `action: ${r.action}`].filter(Boolean).join("\n");
  const cls = r.readiness === "ready" ? null : r.readiness === "unknown" ? "muted" : "warn";
  return h("span", { class: cls, title, "data-rdma": r.readiness }, RDMA_WORDS[r.readiness] || r.readiness);
}
