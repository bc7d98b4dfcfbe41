"""The wire schema's cross-host pair (`TransferResult.peer_host`, part of schema v2): what a
probe may send for a test between its GPU and a GPU of another host of its NVLink domain."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peerwatch.probes.report import TestName, TransferResult, Unit


def result(**fields: object) -> TransferResult:
    base: dict[str, object] = {"test": TestName.CE_WRITE, "unit": Unit.BYTES_PER_SECOND,
                               "value": 700e9, "src": 0, "dst": 0}
    return TransferResult.model_validate({**base, **fields})


def test_a_cross_host_pair_may_name_the_same_index_on_both_hosts() -> None:
    r = result(peer_host="nvl72-a-tray02")
    assert (r.src, r.dst, r.peer_host) == (0, 0, "nvl72-a-tray02")
    assert r.local_gpus() == {0}  # dst lives on the peer host


def test_a_local_pair_still_needs_two_gpus_and_names_both_as_local() -> None:
    with pytest.raises(ValidationError, match="two different GPUs"):
        result()
    assert result(dst=3).local_gpus() == {0, 3}


@pytest.mark.parametrize("bad", ["", "bad host", "-tray", "a/b", "x" * 254])
def test_peer_host_follows_the_host_name_rule(bad: str) -> None:
    with pytest.raises(ValidationError, match="peer_host"):
        result(peer_host=bad)


def test_allreduce_cannot_cross_hosts_yet() -> None:
    with pytest.raises(ValidationError, match="allreduce needs at least two gpus of the"):
        TransferResult(test=TestName.ALLREDUCE, unit=Unit.BYTES_PER_SECOND, value=1e9,
                       gpus=[0, 1], peer_host="nvl72-a-tray02")
