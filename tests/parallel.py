"""Which tests share a pytest-xdist worker (`make test` runs the suite in parallel with
`--dist loadgroup`: tests are handed out one by one, except those of one `xdist_group`).

Much of the suite's wall time is waiting on real processes (servers, Slurm, Chromium,
Alertmanager), so workers overlap it. A test that shares an expensive fixture with others
must stay on their worker, or every worker builds its own copy (and a module-scoped one is
torn down and rebuilt each time another file's test runs in between):

- a session-scoped fixture of this suite (the browser's demo and page, the packaging wheel
  and virtual environments) groups every test using it, by where it is defined;
- a module- or class-scoped fixture groups the tests of that file;
- an explicit `xdist_group` mark wins (Slurm's tests: one cluster at a time on the machine).

The per-worker session fixtures (`PER_WORKER`: each worker's own throwaway PostgreSQL
database and SQLite template) and pytest's own (tmp_path_factory) group nothing.
"""

from __future__ import annotations

import pytest

PER_WORKER = frozenset({"pg_database", "sqlite_template"})
SHARED_SCOPES = ("session", "package", "module", "class")


def group_of(item: pytest.Item) -> str | None:
    """The xdist group `item` must run in, or None (any worker)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    groups = []
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name)
        if not defs or name in PER_WORKER:
            continue
        fixture = defs[-1]
        if fixture.scope not in SHARED_SCOPES or not fixture.baseid:
            continue  # function-scoped, or a plugin's own (tmp_path_factory, ...)
        if fixture.scope in ("session", "package"):
            groups.append((0, fixture.baseid))
        else:
            groups.append((1, item.nodeid.split("::", 1)[0]))
    return min(groups)[1] if groups else None


def assign_groups(items: list[pytest.Item]) -> None:
    """Mark each item with its group (an explicit `xdist_group` mark is left as it is)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        group = group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))

# Tests that saturate the machine's CPU for minutes on purpose (overload, back-pressure):
# one worker runs them one after the other, never two side by side.
SATURATES = pytest.mark.xdist_group("saturates")
