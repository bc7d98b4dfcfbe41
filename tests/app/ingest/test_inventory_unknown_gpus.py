"""An inventory's NVLink ports and pairs naming a GPU it does not list are refused, each
item named by its index (the check tests the whole list at once first, then walks it)."""

from __future__ import annotations

from peerwatch.app.api.report_checks import inventory_problems, sample_problems
from peerwatch.probes.report import Inventory, ReportKind
from peerwatch.probes.sim.simulated import SimulatedFabric
from peerwatch.probes.sweep import build_report


def _inventory() -> Inventory:
    fabric = SimulatedFabric("hgx8", seed=4, hostname="unknown-gpus")
    return build_report(fabric, kind=ReportKind.INVENTORY).inventory


def test_a_healthy_inventory_has_no_problems() -> None:
    assert inventory_problems(_inventory()) == []


def test_a_port_and_a_pair_naming_an_unlisted_gpu_are_named() -> None:
    inv = _inventory()
    ports = list(inv.nvlinks)
    ports[3] = ports[3].model_copy(update={"gpu": 9})
    pairs = list(inv.pairs)
    pairs[5] = pairs[5].model_copy(update={"dst": 11})
    problems = inventory_problems(inv.model_copy(update={"nvlinks": ports, "pairs": pairs}))
    assert [(p["loc"], p["msg"]) for p in problems] == [
        (("inventory", "nvlinks", 3, "gpu"), "nvlink names GPU(s) [9] not in inventory"),
        (("inventory", "pairs", 5), "pair names GPU(s) [11] not in inventory"),
    ]


def test_aer_counters_naming_an_unlisted_gpu_are_named() -> None:
    report = build_report(SimulatedFabric("h200x2", hostname="aer-stray"),
                          kind=ReportKind.INVENTORY)
    sample = report.counters[0]
    stray = sample.aer[0].model_copy(update={"gpu": 7})
    problems = sample_problems(sample.model_copy(update={"aer": [*sample.aer, stray]}),
                               {g.index for g in report.inventory.gpus}, ("counters", 0))
    assert [(p["loc"], p["msg"]) for p in problems] == [
        (("counters", 0, "aer"), "aer names GPU(s) [7] not in inventory")]
