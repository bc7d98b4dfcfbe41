"""One spelling per host: every stored host name in lowercase (DNS is case-insensitive).

Host names are canonical in lowercase from this version on (`probes.report.valid_hostname`):
reports, snapshots, paths, queries, maintenance windows and silences all name a host that
way. This migration brings what was stored before into line: `hosts.name`, the `host` of
alerts (with their `host` label and the fingerprint hashed from the labels), maintenance
windows and job snapshots, and the value of equality matchers on `host` in silences.

Two stored hosts whose names differ only in case (`rte-case-x` and `RTE-Case-X`) are the
same machine with a split history. They are **not** merged here: each has its own
inventory, baselines, judged verdicts and hourly rollups under unique (host, ...) keys, so a
merge would have to choose, row by row, whose state wins, and a wrong choice cannot be
undone. The migration refuses instead, naming every such group, and changes nothing; the
operator renames or deletes the spelling to drop (both statements are in the message),
then runs the migration again.

Revision ID: 0012
Revises: 0011
"""
import hashlib
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = '0012'
down_revision: str | Sequence[str] | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


class CaseDuplicateHosts(RuntimeError):
    """Stored hosts whose names differ only in case: the operator chooses what to keep."""


def _fingerprint(labels: dict) -> str:
    """The alert fingerprint as `app/analysis/fingerprint.py` computes it (frozen here, as a
    migration must not change when the application does)."""
    canonical = json.dumps(sorted(labels.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def case_duplicates(conn: sa.Connection) -> list[list[str]]:
    names = conn.execute(sa.text("SELECT name FROM hosts ORDER BY name")).scalars().all()
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name.lower(), []).append(name)
    return [group for group in groups.values() if len(group) > 1]


def _refuse(groups: list[list[str]]) -> None:
    listed = "; ".join(" and ".join(repr(n) for n in group) for group in groups)
    example = next(n for n in groups[0] if n != n.lower()) if any(
        n != n.lower() for n in groups[0]) else groups[0][-1]
    raise CaseDuplicateHosts(
        f"{len(groups)} host(s) are stored under names that differ only in case: {listed}. "
        "Host names are now compared in lowercase, so each group is one host; this "
        "migration does not merge their histories (which inventory, baselines and "
        "verdicts win is your choice). Nothing was changed. For each group keep one "
        "spelling and either rename the others, e.g. "
        f"UPDATE hosts SET name = '{example.lower()}-old' WHERE name = '{example}'; "
        f"or delete them with their history: DELETE FROM hosts WHERE name = '{example}'; "
        "then run `peerwatch migrate` again.")


def _lower_column(table: str) -> None:
    op.execute(f"UPDATE {table} SET host = lower(host) WHERE host <> lower(host)")


def _lower_alerts(conn: sa.Connection) -> None:
    rows = conn.execute(sa.text(
        "SELECT id, labels FROM alerts WHERE host <> lower(host)")).all()
    for alert_id, labels in rows:
        labels = json.loads(labels) if isinstance(labels, str) else dict(labels)
        if "host" in labels:
            labels["host"] = str(labels["host"]).lower()
        conn.execute(sa.text(
            "UPDATE alerts SET host = lower(host), labels = :labels, fingerprint = :fp "
            "WHERE id = :id").bindparams(sa.bindparam("labels", type_=sa.JSON)),
            {"labels": labels, "fp": _fingerprint(labels), "id": alert_id})


def _lower_silences(conn: sa.Connection) -> None:
    for silence_id, matchers in conn.execute(sa.text("SELECT id, matchers FROM silences")):
        matchers = json.loads(matchers) if isinstance(matchers, str) else list(matchers)
        changed = False
        for m in matchers:
            if m.get("name") == "host" and not m.get("is_regex") and \
                    str(m.get("value", "")) != str(m.get("value", "")).lower():
                m["value"], changed = str(m["value"]).lower(), True
        if changed:
            conn.execute(sa.text("UPDATE silences SET matchers = :m WHERE id = :id")
                         .bindparams(sa.bindparam("m", type_=sa.JSON)),
                         {"m": matchers, "id": silence_id})


def upgrade() -> None:
    """Upgrade schema."""
    conn = op.get_bind()
    if groups := case_duplicates(conn):
        _refuse(groups)
    op.execute("UPDATE hosts SET name = lower(name) WHERE name <> lower(name)")
    _lower_alerts(conn)
    for table in ("maintenance_windows", "job_snapshots"):
        _lower_column(table)
    _lower_silences(conn)


def downgrade() -> None:
    """Downgrade schema: nothing to undo (the original case of a name is not kept, and a
    lowercase name is valid for the older version too)."""
