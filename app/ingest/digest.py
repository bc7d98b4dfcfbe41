"""What tells a retry from a reused `report_id`: the report's digest, and the inventory's
canonical JSON the inventory memo hashes, taken from one serialization.
"""

from __future__ import annotations

import hashlib

from peerwatch.probes.report import Report

# The report's canonical JSON holds its inventory's, between these two top-level keys (the
# fields' order in `Report`; no key inside a host identity or an inventory has those names,
# and inside a JSON string a quote is always escaped, so neither can occur there).
_INVENTORY_FROM, _INVENTORY_TO = b',"inventory":', b',"counters":'


def report_digest_and_inventory(report: Report, body: bytes | None = None
                                ) -> tuple[str, bytes]:
    """The report's digest (the SHA-256 of its canonical JSON: what tells a retry from a
    reused report_id) and the inventory's canonical JSON (what the inventory memo hashes).

    With `body`, the report's canonical JSON as posted (its sender has this server's wire
    models, `posted_report.is_canonical`): the digest is its bytes', and only the inventory
    is serialized (serializing a sweep's results and counters again is a real share of its CPU).
    Without (a report stored in process, or posted by other wire models), the report is
    serialized once for both: serializing the inventory again cost nearly as much."""
    if body is not None:
        return hashlib.sha256(body).hexdigest(), report.inventory.model_dump_json().encode()
    canonical = report.model_dump_json().encode()
    start = canonical.index(_INVENTORY_FROM) + len(_INVENTORY_FROM)
    return (hashlib.sha256(canonical).hexdigest(),
            canonical[start:canonical.index(_INVENTORY_TO, start)])


def canonical_digest(report: Report) -> str:
    """SHA-256 of the report's canonical JSON, serialized here."""
    return hashlib.sha256(report.model_dump_json().encode()).hexdigest()


def same_report(stored_digest: str, digest: str, report: Report) -> bool:
    """Is the report stored under `stored_digest` this `report` (whose digest is `digest`)?
    Only when the two differ is the report serialized here to compare its canonical digest
    too: a body that was taken for canonical JSON and was not (stored by a release that
    hashed every posted body's bytes, or vouched for by a sender wrongly) is then still
    known by its content."""
    return stored_digest == digest or stored_digest == canonical_digest(report)
