"""Choosing a fabric by name; 'auto' falls back to a simulation where there are no GPUs."""

from __future__ import annotations

import importlib.util

import pytest

from peerwatch.probes.errors import BadProbeRequest, FabricUnavailable
from peerwatch.probes.fabric import Fabric
from peerwatch.probes.fabric_select import fabric_choices, open_fabric
from peerwatch.probes.sim.simulated import SimulatedFabric


def _has_gpu() -> bool:
    if importlib.util.find_spec("peerwatch.probes.nvidia.real") is None:
        return False
    try:
        open_fabric("nvml").close()
    except FabricUnavailable:
        return False
    return True


def test_simulated_presets_open_with_seed_and_hostname() -> None:
    fab = open_fabric("simulated:mesh4", seed=3, hostname="lab-1")
    assert isinstance(fab, SimulatedFabric) and isinstance(fab, Fabric)
    assert (fab.name, fab.seed, fab.host().hostname) == ("simulated:mesh4", 3, "lab-1")


def test_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(BadProbeRequest, match="unknown simulated preset 'dgx9'.*h200x2, hgx8"):
        open_fabric("simulated:dgx9")


def test_unknown_fabric_names_the_choices() -> None:
    with pytest.raises(BadProbeRequest, match="unknown fabric 'cuda'.*simulated:pcie4"):
        open_fabric("cuda")
    assert fabric_choices()[:2] == ["auto", "nvml"]


def test_auto_falls_back_with_a_message_where_there_are_no_gpus() -> None:
    if _has_gpu():
        pytest.skip("this machine has GPUs: auto picks the real backend")
    said: list[str] = []
    fab = open_fabric("auto", seed=1, on_fallback=said.append)
    assert fab.name == "simulated:h200x2"
    assert len(said) == 1 and "using the simulated fabric simulated:h200x2" in said[0]
    with pytest.raises(FabricUnavailable):
        open_fabric("nvml")
