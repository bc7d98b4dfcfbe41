"""Import circles of a tree, found and told in words for tests/test_layers.py.

A circle is a set of modules each reaching every other through imports (a strongly
connected component of more than one module). Python's graph is grimp's, the one
import-linter reads, so an import inside a function counts like one at the top; the
dashboard's is read from its ES module `import`/`export ... from './x.js'` lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

import grimp

Graph = Mapping[str, set[str]]
# `import {a} from './x.js'` (over several lines too), `export {a} from './x.js'`,
# `import './x.js'` and `import('./x.js')`: a quote never opens before the path's.
JS_IMPORT = re.compile(
    r"^\s*(?:import|export)\b[^;'\"]*?\bfrom\s*['\"]([^'\"]+)['\"]"
    r"|^\s*import\s*['\"]([^'\"]+)['\"]"
    r"|\bimport\(\s*['\"]([^'\"]+)['\"]\s*\)",
    re.MULTILINE)


def python_graph(package: str) -> tuple[Graph, grimp.ImportGraph]:
    """The imports among `package`'s own modules, and grimp's graph (for the lines)."""
    full = grimp.build_graph(package, cache_dir=None)
    mine = {m for m in full.modules if m == package or m.startswith(package + ".")}
    graph = {m: full.find_modules_directly_imported_by(m) & mine for m in mine}
    return graph, full


def js_graph(folder: Path) -> Graph:
    """The relative imports among the ES modules under `folder` (vendored code left out)."""
    files = [p for p in sorted(folder.rglob("*.js")) if "vendor" not in p.relative_to(folder).parts]
    names = {p.resolve(): p.relative_to(folder).as_posix() for p in files}
    graph: dict[str, set[str]] = {}
    for path, name in names.items():
        targets = (next(g for g in m.groups() if g) for m in JS_IMPORT.finditer(path.read_text()))
        resolved = ((path.parent / t).resolve() for t in targets if t.startswith(("./", "../")))
        graph[name] = {names[r] for r in resolved if r in names}
    return graph


def _reach(graph: Graph, start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += graph.get(module, ())
    return seen


def circles(graph: Graph) -> list[list[str]]:
    """The circles of `graph`, each sorted, in order of their first module."""
    reach = {m: _reach(graph, m) for m in graph}
    found = {frozenset({m} | {n for n in reach[m] if m in reach[n]})
             for m in graph if m in reach[m]}
    return sorted(sorted(c) for c in found)


def _path_around(graph: Graph, circle: list[str]) -> list[str]:
    """One way round `circle` from its first module back to it: the shortest path."""
    start, inside = circle[0], set(circle)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        step = []
        for module in frontier:
            for nxt in sorted(graph[module] & inside):
                if nxt == start:
                    return paths[module] + [start]
                if nxt not in paths:
                    paths[nxt] = paths[module] + [nxt]
                    step.append(nxt)
        frontier = step
    return circle


def told(graph: Graph, found: list[list[str]], line: Callable[[str, str], str]) -> str:
    """Each circle in words: its modules, then one way round it with the importing lines
    (`line(importer, imported)`)."""
    out = []
    for circle in found:
        out.append(f"circle of {len(circle)}: {', '.join(circle)}")
        way = _path_around(graph, circle)
        out += [f"  {a} -> {b}{line(a, b)}" for a, b in zip(way, way[1:], strict=False)]
    return "\n".join(out)


def python_line(full: grimp.ImportGraph) -> Callable[[str, str], str]:
    """Where `importer` imports `imported`, as grimp read it: `: line N: <the line>`."""
    def line(importer: str, imported: str) -> str:
        details = full.get_import_details(importer=importer, imported=imported)
        return "".join(f"\n      line {d['line_number']}: {d['line_contents']}" for d in details)
    return line
