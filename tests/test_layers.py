"""The written layers hold: import-linter's contracts (`.importlinter`), and what imports
cannot show, read from the source: no query and no route writes.

The layers are written in `app/__init__.py` and `probes/__init__.py`; a broken contract
fails here with import-linter's own text (which module imports what, line by line). The
exceptions in `.importlinter` and in ROUTES_THAT_WRITE each name the issue that removes
them; once it has, import-linter reports the unmatched exception and this test fails until
the line is deleted.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WRITES = {"commit", "flush", "rollback", "add", "add_all", "delete", "merge",
          "bulk_save_objects", "bulk_insert_mappings", "bulk_update_mappings"}
WRITE_CONSTRUCTS = {"insert", "update", "delete"}
WRITE_SQL = re.compile(r"^\s*(INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                       r"(CREATE|DROP|ALTER)\s+(TABLE|INDEX|VIEW)|TRUNCATE\s|COPY\s+\w+)",
                       re.IGNORECASE)
# issue 22 (helper harden) moves these routes' writes and commits into services
ROUTES_THAT_WRITE: set[str] = set()  # none since issue 22 moved the alert and silence writes


def test_import_contracts_hold() -> None:
    lint = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"]
    done = subprocess.run([*lint, "--no-logo", "--no-cache", str(ROOT / ".importlinter")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"import contracts broken:\n{done.stdout}\n{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout


def _session_receiver(node: ast.expr) -> bool:
    """`session.x(...)`, `self.session.x(...)`, `conn.x(...)`: a database handle by name."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in {"session", "db", "conn", "connection"}


def _writes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
            for alias in node.names:
                if alias.name in WRITE_CONSTRUCTS:
                    yield node.lineno, f"imports sqlalchemy's {alias.name}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in WRITES and _session_receiver(node.func.value):
                yield node.lineno, f"calls {ast.unparse(node.func)}()"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if WRITE_SQL.match(node.value):
                yield node.lineno, f"holds SQL that writes: {node.value.strip()[:40]!r}"


def _findings(folder: str, allowed: set[str]) -> list[str]:
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in allowed:
            continue
        out += [f"{name}:{line}: {what}" for line, what in _writes(ast.parse(path.read_text()))]
    return out


def test_queries_never_write() -> None:
    assert _findings("app/queries", set()) == []


def test_routes_never_write_or_commit() -> None:
    assert _findings("app/routes", ROUTES_THAT_WRITE) == []


def test_the_route_exceptions_still_write() -> None:
    """An exception whose route no longer writes is stale: delete it from ROUTES_THAT_WRITE."""
    for name in sorted(ROUTES_THAT_WRITE):
        assert list(_writes(ast.parse((ROOT / name).read_text()))), (
            f"{name} no longer writes: remove it from ROUTES_THAT_WRITE")


def test_the_source_check_sees_a_write() -> None:
    """The source check is not blind: a query that commits, inserts or holds an UPDATE is
    named, with its line."""
    source = ("from sqlalchemy import insert, select\n"
              "def f(session):\n    session.add(1)\n    session.commit()\n"
              "    return 'UPDATE hosts SET x = 1'\n"
              "def g():\n    'Create a silence, update the docs: prose, not SQL.'\n")
    found = [what for _, what in _writes(ast.parse(source))]
    assert found == ["imports sqlalchemy's insert", "calls session.add()",
                     "calls session.commit()", "holds SQL that writes: 'UPDATE hosts SET x = 1'"]
