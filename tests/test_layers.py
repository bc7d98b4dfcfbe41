"""The written layers hold: import-linter's contracts (`.importlinter`), and what imports
cannot show, read from the source: no query and no route writes. No tree (app/, probes/,
frontend/) has an import circle (tests/import_circles.py finds and tells them).

The layers are written in `app/__init__.py` and `probes/__init__.py`; a broken contract
fails here with import-linter's own text (which module imports what, line by line). The
exceptions in `.importlinter` and in ROUTES_THAT_WRITE each name the issue that removes
them; once it has, import-linter reports the unmatched exception and this test fails until
the line is deleted.
"""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import import_circles

ROOT = Path(__file__).resolve().parents[1]
WRITES = {"commit", "flush", "rollback", "add", "add_all", "delete", "merge",
          "bulk_save_objects", "bulk_insert_mappings", "bulk_update_mappings"}
WRITE_CONSTRUCTS = {"insert", "update", "delete"}
WRITE_SQL = re.compile(r"^\s*(INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                       r"(CREATE|DROP|ALTER)\s+(TABLE|INDEX|VIEW)|TRUNCATE\s|COPY\s+\w+)",
                       re.IGNORECASE)
# routes whose writes and commits have not moved into services yet
ROUTES_THAT_WRITE: set[str] = set()  # none: the alert and silence writes live in services


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


def _no_circles(graph: import_circles.Graph, line: Callable[[str, str], str]) -> None:
    found = import_circles.circles(graph)
    words = import_circles.told(graph, found, line)
    print(words)
    assert not found, f"{len(found)} import circle(s):\n{words}"


@pytest.mark.parametrize("package", [
    pytest.param("peerwatch.app", id="app"),
    pytest.param("peerwatch.probes", id="probes"),
])
def test_no_import_circles_in_python(package: str) -> None:
    """No module of app/ or probes/ reaches itself through imports: at the top of a file,
    inside a function or under TYPE_CHECKING (grimp reads all three; a circle of annotations
    still ties the modules together). No package `__init__` is let off."""
    graph, full = import_circles.python_graph(package)
    _no_circles(graph, import_circles.python_line(full))


def agent_imports(graph: import_circles.Graph, agent: str) -> list[str]:
    """Imports of `agent` (a package) by modules outside it."""
    def inside(module: str) -> bool:
        return module == agent or module.startswith(agent + ".")

    return sorted(f"{m} -> {t}" for m, targets in graph.items() if not inside(m)
                  for t in targets if inside(t))


def test_nothing_in_probes_imports_the_agent() -> None:
    """probes/agent/ (the long-running probe) stands on top of the rest of probes/: a probe
    pass, the fabrics and the wire schema run without it (snapshots, bench, the server)."""
    graph, _ = import_circles.python_graph("peerwatch.probes")
    assert agent_imports(graph, "peerwatch.probes.agent") == []


def test_an_import_of_the_agent_is_seen() -> None:
    graph = {"p.sweep": {"p.agent.spool"}, "p.agent.spool": {"p.report"}, "p.report": set()}
    assert agent_imports(graph, "p.agent") == ["p.sweep -> p.agent.spool"]


def test_no_import_circles_in_frontend() -> None:
    """No dashboard module reaches itself through its relative `import ... from` lines."""
    _no_circles(import_circles.js_graph(ROOT / "frontend"), lambda a, b: "")


def test_circles_are_found() -> None:
    """The circle search is not blind: a two-module circle and a longer one are named,
    a module importing itself is one, and a chain without a way back is none."""
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"f"},
             "g": {"a"}}
    assert import_circles.circles(graph) == [["a", "b"], ["c", "d", "e"], ["f"]]
    assert "c -> d\n  d -> e\n  e -> c" in import_circles.told(graph, [["c", "d", "e"]],
                                                              lambda a, b: "")


def test_frontend_imports_are_read(tmp_path: Path) -> None:
    """Named, multi-line, re-exported, bare and dynamic imports are read and resolved; a
    package or vendored module is left out."""
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "lib.js").write_text("import './../a.js';\n")
    (tmp_path / "a.js").write_text("import {\n  x,\n  y,\n} from './b.js';\n"
                                   "export { z } from \"./c.js\";\nimport 'plotly';\n")
    (tmp_path / "b.js").write_text("import './c.js';\nconst m = await import('./a.js');\n")
    (tmp_path / "c.js").write_text("// import nothing from './a.js' here\n")
    assert import_circles.js_graph(tmp_path) == {"a.js": {"b.js", "c.js"},
                                                 "b.js": {"a.js", "c.js"}, "c.js": set()}


def _app_layer_exceptions() -> list[str]:
    """The `ignore_imports` lines of the app-layers contract: imports running back up."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    lines = config["importlinter:contract:app-layers"].get("ignore_imports", "")
    return [line.strip() for line in lines.splitlines() if line.strip()]


def test_at_most_one_import_runs_up_the_app_layers() -> None:
    """The app's layers hold with at most one exception in `.importlinter`."""
    upward = _app_layer_exceptions()
    assert len(upward) <= 1, f"{len(upward)} imports run up the layers:\n" + "\n".join(upward)
