"""Colour only what is at fault: on an NVL72 tray whose GPU2 lost links, the
healthy GPUs' edges to the NVSwitch (judged by their slowest pair, which ends at GPU2) are
drawn healthy; GPU2's own edge keeps its verdict's colour. The page's own topology module
draws a tray built here, in the real browser."""

from __future__ import annotations

import pytest

from tests.browser.conftest import Fleet, open_view

pytestmark = pytest.mark.browser

COLOURS = """async () => {
  const { topologyFigure } = await import('/static/charts/topology.js');
  const gpu = (i, verdict) => ({ id: `gpu${i}`, kind: 'gpu', gpu: i, label: `GPU${i}`, verdict,
    reason: verdict === 'healthy' ? `GPU${i}: 18/18 NVLinks up` : 'GPU2: 8/18 NVLinks up' });
  const edge = (i, verdict, width, slowest) => ({ id: `gpu${i}-nvswitch`, source: `gpu${i}`,
    target: 'nvswitch', kind: 'nvlink', width, links_total: 18, verdict,
    reason: `${width}/18 links up; slowest: GPU${slowest[0]}->GPU${slowest[1]} ce_write 400 GB/s ` +
      'is 0.54 of expected 747 GB/s' });
  const topo = { nodes: [gpu(0, 'healthy'), gpu(1, 'healthy'), gpu(2, 'down'), gpu(3, 'healthy'),
      { id: 'nvswitch', kind: 'nvswitch', label: 'NVSwitch', verdict: 'healthy', reason: '' }],
    edges: [edge(0, 'degraded', 18, [0, 2]), edge(1, 'degraded', 18, [2, 1]),
      edge(2, 'down', 8, [0, 2]), edge(3, 'degraded', 18, [3, 0])] };
  const fig = topologyFigure(topo);
  // a trace per line style, its edges' ids in meta.edges
  return Object.fromEntries(fig.data.filter(t => t.meta && t.meta.edges)
    .flatMap(t => t.meta.edges.map(id => [id, t.line.color])));
}"""


def test_only_the_failing_gpus_links_are_coloured(page, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    open_view(page, "/#/fleet", "fleet")
    colours = page.evaluate(COLOURS)
    green, orange, vermillion = "#009E73", "#E69F00", "#D55E00"
    assert colours["gpu2-nvswitch"] == vermillion  # the GPU at fault
    assert colours["gpu0-nvswitch"] == green and colours["gpu1-nvswitch"] == green
    # GPU3's slowest pair ends at GPU0, which is healthy: a slowness of its own, kept orange
    assert colours["gpu3-nvswitch"] == orange
