// The inventory table of one host: what each GPU is, how its PCIe link trained against what it
// could, how many NVLink ports are up, what it is doing now, whether its clocks are held
// (power cap, thermal, HW slowdown), whether a NIC can DMA into it, and its verdict with the reason.

import { h } from "../shared/dom.js";
import * as fmt from "../shared/format.js";
import { clocksCell, driverCell, rdmaCell } from "./gpu_evidence.js";
import { badge } from "../shared/palette.js";
import { sortableTable } from "../shared/table.js";

function pcieCell(p) {
  const now = `Gen${p.gen_current ?? "?"} x${p.width_current ?? "?"}`;
  const max = `Gen${p.gen_max ?? "?"} x${p.width_max ?? "?"}`;
  const down = (p.gen_current && p.gen_max && p.gen_current < p.gen_max)
    || (p.width_current && p.width_max && p.width_current < p.width_max);
  return h("span", { class: down ? "warn" : null, title: down ? "link trained below its maximum" : null },
    down ? "▼ " : "", now, h("span", { class: "muted" }, ` / ${max}`));
}

function nvlinkCell(gpu, downPorts) {
  if (!gpu.nvlink_count) return h("span", { class: "muted" }, "none");
  const ports = downPorts.get(gpu.index) || [];
  return h("span", { class: ports.length ? "warn" : null },
    ports.length ? "✕ " : "", `${gpu.nvlinks_up} / ${gpu.nvlink_count}`,
    ports.length ? h("span", { class: "muted" }, ` (down: ${ports.join(", ")})`) : null);
}

function activityCell(a) {
  if (!a) return h("span", { class: "muted" }, "–");
  const util = a.utilization_pct === null ? "–" : `${Math.round(a.utilization_pct)}%`;
  return [util, h("span", { class: "muted" }, ` · ${a.compute_processes} proc`)];
}

/** `selected()`: the GPU index the URL points at (?gpu=3, e.g. from an alert), or null. */
export function inventoryTable(selected = () => null) {
  return sortableTable({
    label: "GPU inventory",
    rowClass: (r) => (String(r.gpu.index) === selected() ? "selected" : null),
    rowKey: (r) => String(r.gpu.index),
    sort: { key: "gpu", dir: "asc" },
    columns: [
      { key: "gpu", label: "GPU", value: (r) => r.gpu.index, cell: (r) => h("b", {}, `GPU${r.gpu.index}`) },
      { key: "verdict", label: "Verdict", value: (r) => r.health?.verdict,
        cell: (r) => (r.health ? badge(r.health.verdict, r.health.reason) : "–") },
      { key: "reason", label: "Why", class: "reason why",
        cell: (r) => (r.health && r.health.verdict !== "healthy"
          ? h("span", { title: r.health.reason }, r.health.reason) : "") },
      { key: "pcie", label: "PCIe now / max", cell: (r) => pcieCell(r.gpu.pcie) },
      { key: "nvlink", label: "NVLink up / total", value: (r) => r.gpu.nvlinks_up - r.gpu.nvlink_count,
        cell: (r) => nvlinkCell(r.gpu, r.downPorts) },
      { key: "mem", label: "Memory", class: "num", value: (r) => r.gpu.memory_total_bytes,
        cell: (r) => fmt.bytes(r.gpu.memory_total_bytes) },
      { key: "util", label: "Busy", value: (r) => r.gpu.activity?.utilization_pct ?? null,
        cell: (r) => activityCell(r.gpu.activity) },
      { key: "clocks", label: "Clocks", value: (r) => (r.gpu.clocks?.label ? 0 : 1),
        cell: (r) => clocksCell(r.gpu.clocks) },
      { key: "rdma", label: "RDMA", value: (r) => r.gpu.rdma_readiness?.readiness ?? null,
        cell: (r) => rdmaCell(r.gpu.rdma_readiness) },
      { key: "driver", label: "Driver says", cell: (r) => driverCell(r.gpu.driver) },
      { key: "name", label: "Name", value: (r) => r.gpu.name, cell: (r) => r.gpu.name },
      { key: "uuid", label: "UUID", class: "mono clip uuid",
        cell: (r) => h("span", { title: r.gpu.uuid }, r.gpu.uuid) },
      { key: "bus", label: "PCI bus", class: "mono", value: (r) => r.gpu.pci_bus_id, cell: (r) => r.gpu.pci_bus_id },
      { key: "cpu", label: "CPU affinity", class: "mono", cell: (r) => r.gpu.cpu_affinity ?? "–" },
    ],
  });
}

/** Rows for the table: each GPU with its health and its down NVLink ports. */
export function inventoryRows(detail, health) {
  const downPorts = new Map();
  for (const l of detail.nvlinks) {
    if (l.state === "up") continue;
    if (!downPorts.has(l.gpu)) downPorts.set(l.gpu, []);
    downPorts.get(l.gpu).push(l.link);
  }
  const byGpu = new Map((health?.gpus || []).map((g) => [g.gpu, g]));
  return detail.gpus.map((gpu) => ({ gpu, health: byGpu.get(gpu.index), downPorts }));
}
