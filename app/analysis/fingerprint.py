"""The identity of an alert instance: a hash of its label set.

Pure (labels in, 64 hex characters out), so both the rule engine (`app/alerting/`) and the
services that write their own alerts (`app/services/drain.py`: DrainBreakerOpen and
NodeTakenOutByPeerwatch) name an instance the same way without a services -> alerting import.
"""

from __future__ import annotations

import hashlib
import json


def fingerprint(labels: dict[str, str]) -> str:
    """Stable identity of an alert instance: a hash of its sorted label set (64 hex chars)."""
    canonical = json.dumps(sorted(labels.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
