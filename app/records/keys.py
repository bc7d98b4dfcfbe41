"""The key of one judged (pair, test): (src, dst, test); a per-GPU test has src == dst."""

from __future__ import annotations

from peerwatch.probes.report import TestName

PairKey = tuple[int, int, TestName]
