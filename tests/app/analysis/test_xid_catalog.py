"""The Xid/SXid catalog and its count/window thresholds: pure lookups and judgements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from peerwatch.app.analysis.xid_catalog import CATALOG, SXID_URL, XID_URL, lookup
from peerwatch.app.analysis.xid_judge import HOLD_S, EventFact, judge_events

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _ago(s: float) -> datetime:
    return NOW - timedelta(seconds=s)


def test_every_entry_cites_its_source_and_version() -> None:
    for (kind, _), e in CATALOG.items():
        assert e.source == (SXID_URL if kind == "sxid" else XID_URL)
        assert "R580" in e.version and e.action and e.object in ("gpu", "link", "switch")


def test_lookups_of_the_fabric_events() -> None:
    assert (lookup("xid", 74).object, lookup("xid", 74).severity) == ("link", "warning")
    assert (lookup("xid", 79).object, lookup("xid", 79).severity) == ("gpu", "critical")
    assert lookup("sxid", 12028).object == "switch"
    unknown = lookup("xid", 9999)
    assert unknown.severity == "info" and unknown.source == XID_URL


def test_a_non_fatal_nvlink_event_is_never_called_fatal() -> None:
    assert lookup("xid", 149, fatal=False).severity == "warning"
    assert lookup("xid", 149, fatal=True).severity == "critical"
    assert "subcode 33" in lookup("xid", 149, fatal=False, subcode=33).name
    assert lookup("sxid", 20034, fatal=False).severity == "warning"
    assert lookup("sxid", 99999, fatal=True).severity == "critical"
    # Xid 74's own line always says "fatal error detected": the catalog, not the word, decides
    assert lookup("xid", 74, fatal=True).severity == "warning"


def test_xid_74_once_is_a_warning_three_in_the_window_a_link_fault() -> None:
    once = judge_events([EventFact("xid", 74, _ago(60), gpu=2, link=5)], NOW)
    assert [(f.level, f.gpu, f.link, f.count) for f in once] == [("warning", 2, 5, 1)]
    three = [EventFact("xid", 74, _ago(s), gpu=2, link=5) for s in (500, 300, 60)]
    (fault,) = judge_events(three, NOW)
    assert (fault.level, fault.count) == ("fault", 3)
    assert "3x in 10 min, threshold 3" in fault.reason() and XID_URL in fault.reason()
    spread = [EventFact("xid", 74, _ago(s), gpu=2, link=5) for s in (1900, 1200, 60)]
    assert [f.level for f in judge_events(spread, NOW)] == ["warning"]  # not in one window
    repeated = [EventFact("xid", 74, _ago(30), gpu=2, link=5, count=3)]  # collapsed repeats
    assert [f.level for f in judge_events(repeated, NOW)] == ["fault"]
    other_links = [EventFact("xid", 74, _ago(60), gpu=2, link=k) for k in (1, 2, 3)]
    assert [f.level for f in judge_events(other_links, NOW)] == ["warning"] * 3


def test_xid_79_is_a_lost_gpu_at_once_and_held_for_a_while() -> None:
    (f,) = judge_events([EventFact("xid", 79, _ago(10), gpu=4)], NOW)
    assert (f.level, f.entry.object, f.gpu) == ("fault", "gpu", 4)
    assert judge_events([EventFact("xid", 79, _ago(HOLD_S + 60), gpu=4)], NOW) == []


def test_info_events_never_fault_and_switches_are_their_own_object() -> None:
    many = [EventFact("xid", 13, _ago(s), gpu=0) for s in range(10, 200, 10)]
    assert {f.level for f in judge_events(many, NOW)} == {"info"}
    (sw,) = judge_events([EventFact("sxid", 20034, _ago(5), switch="tray4", fatal=True)], NOW)
    assert (sw.level, sw.where) == ("fault", "NVSwitch tray4")


def test_every_catalog_entry_has_an_action_and_a_chain() -> None:
    """Completeness: every Xid of NVIDIA's catalog (1-172) and every SXid is here, each with
    an action, an ordered chain, its meaning, object, severity and Xid 154 linkage."""
    assert {code for kind, code in CATALOG if kind == "xid"} == set(range(1, 173))
    for (kind, code), e in CATALOG.items():
        assert e.action.strip() and e.chain and all(s.strip() for s in e.chain), (kind, code)
        assert e.name and e.severity in ("info", "warning", "critical") and e.linkage
        if kind == "xid":
            assert e.mnemonic, code


def test_the_well_known_xids_are_judged_with_their_buckets() -> None:
    for code in (46, 109, 110, 136, 143, 155, 158):
        e = lookup("xid", code)
        assert (e.severity, e.immediate) == ("critical", "RESET_GPU"), code
        assert "reset the GPU" in " ".join(e.chain) and "service" in e.chain[-1]
    assert lookup("xid", 154).linkage.startswith("is Xid 154")
    assert lookup("xid", 46).linkage.startswith("may set a recovery action")
    assert lookup("xid", 13).linkage == "none" and lookup("xid", 13).severity == "info"
    assert lookup("xid", 54).severity == "warning"
    assert lookup("xid", 79).chain[:2] == ("drain the node", "restart the OS")
