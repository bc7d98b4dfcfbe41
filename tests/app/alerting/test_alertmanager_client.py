"""The Alertmanager client against a real Alertmanager: post, read back, resolve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from peerwatch.app.alerting.alertmanager import (
    AlertmanagerClient,
    AlertmanagerUnavailable,
    OutgoingAlert,
)
from tests.app.alerting.real_alertmanager import alerts_in


def _alert(ends_at: datetime, starts_at: datetime) -> OutgoingAlert:
    return OutgoingAlert(
        labels={"alertname": "NVLinkDown", "severity": "critical", "host": "hgx-07",
                "gpu": "3", "link": "7"},
        annotations={"summary": "NVLink 7 of GPU3 on hgx-07 is down",
                     "dashboard": "http://peerwatch.test/#/host/hgx-07?gpu=3"},
        starts_at=starts_at, ends_at=ends_at,
        generator_url="http://peerwatch.test/api/v1/alerts/12",
    )


def test_round_trip_firing_then_resolved(alertmanager_url: str) -> None:
    client = AlertmanagerClient(alertmanager_url)
    start = datetime.now(UTC) - timedelta(minutes=2)
    client.post([_alert(datetime.now(UTC) + timedelta(minutes=4), start)])

    [held] = [a for a in alerts_in(alertmanager_url) if a["labels"].get("host") == "hgx-07"]
    assert held["labels"]["alertname"] == "NVLinkDown"
    assert held["labels"]["link"] == "7"
    assert held["annotations"]["summary"] == "NVLink 7 of GPU3 on hgx-07 is down"
    assert held["generatorURL"] == "http://peerwatch.test/api/v1/alerts/12"
    assert held["status"]["state"] == "active"

    client.post([_alert(datetime.now(UTC), start)])
    assert not [a for a in alerts_in(alertmanager_url) if a["labels"].get("host") == "hgx-07"]
    client.close()


def test_unreachable_alertmanager_raises_a_clear_error() -> None:
    client = AlertmanagerClient("http://127.0.0.1:9", timeout_s=1)
    now = datetime.now(UTC)
    with pytest.raises(AlertmanagerUnavailable, match="cannot reach Alertmanager"):
        client.post([_alert(now, now)])


def test_rejected_alerts_raise_with_the_answer(alertmanager_url: str) -> None:
    client = AlertmanagerClient(alertmanager_url)
    now = datetime.now(UTC)
    bad = OutgoingAlert(labels={}, annotations={}, starts_at=now, ends_at=now)
    with pytest.raises(AlertmanagerUnavailable, match="answered 400"):
        client.post([bad])
