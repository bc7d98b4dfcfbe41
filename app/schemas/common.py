"""Shapes shared by many responses: a verdict with its reason, since when, busy."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from peerwatch.app.analysis.verdict import Verdict
from peerwatch.probes.report import (
    TestName,
)


def with_example(example: dict[str, Any]) -> ConfigDict:
    """A model's config carrying one example for the OpenAPI document."""
    return ConfigDict(json_schema_extra={"examples": [example]})


class Judged(BaseModel):
    verdict: Verdict
    reason: str = Field(examples=["all 56 pairs within 0.9 of expected"])
    since: datetime | None = Field(
        default=None, description="When it entered this verdict (server clock); None when "
        "not judged yet.")


class JudgedAt(BaseModel):
    """How current a host-scoped answer is: its verdicts are the stored judgement of then."""

    judged_at: datetime | None = Field(
        default=None, description="When the server last judged this host (server clock); "
        "null while its first judgement is on its way.")


class Busy(JudgedAt):
    """A host whose reports the server refused (429/503) after its newest stored one."""

    refused_reports: int = Field(default=0, description="Reports of this host the server "
                                 "refused because it was busy, since it last stored one.")
    last_refused_at: datetime | None = Field(default=None, description="When it last did "
                                             "(server clock): the probe was heard from then.")
    last_heard_at: datetime | None = Field(default=None, description="When the probe's "
                                           "newest request arrived (server clock), stored, "
                                           "refused or still waiting: staleness counts "
                                           "from the newest of this and last_received_at.")
    busy: str | None = Field(default=None, examples=[
        "not judged since 10:20 UTC: server busy, 12 reports refused"],
        description="Set while the server refuses this host's reports: its verdicts are as "
        "of `judged_at`, and the probe is not to blame.")


class PairRef(BaseModel):
    src: int
    dst: int
    test: TestName
    ratio: float = Field(description="measured / expected (latency: expected / measured).")


class PairExplained(BaseModel):
    """What a pair's state belongs to (`app/analysis/attribution.py`), and whether its page
    waits (`app/analysis/pattern_wait.py`): shared by `/health` pairs and matrix cells."""

    explained_by: int | None = Field(default=None, examples=[3], description=(
        "The GPU whose fault explains this pair's state (bad with every peer, or its fabric, "
        "links or presence make its pairs untrustworthy): that GPU's alert is the page, and "
        "the pair blames only it. None: the pair speaks for itself."))
    cause: str | None = Field(default=None, examples=["GPU3, whose copies fail with every "
                                                      "peer", "GPU6 fabric in progress"],
                              description="Why, in short words (also 'P2P unavailable').")
    waits_for: str | None = Field(default=None, examples=[
        "GPU3's pattern: 5 of its 7 peers bad, 2 not measured since"], description=(
        "The pair's own page waits (at most PEERWATCH_PATTERN_WAIT_S) while a GPU pattern "
        "may still be forming: the other pairs of that GPU have not all been measured since "
        "the trouble began. None: not held."))
