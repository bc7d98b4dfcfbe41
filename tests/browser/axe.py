"""axe-core (Deque's accessibility rules engine) from npm, run inside the real Chromium.

`axe_source()` installs the pinned version once into `.cache/npm/` (ignored by git) with the
machine's own npm (`npm install --prefix .cache/npm axe-core@<AXE_VERSION>`), so `make test`
on a fresh machine gets it without a step of its own; later runs reuse it. `violations(page)`
evaluates it in the page (through the DevTools protocol, which the page's CSP does not
govern) and returns the violations of the impacts asked for.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from tests.conftest import require

AXE_VERSION = "4.14.1"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "npm"
AXE_JS = CACHE / "node_modules" / "axe-core" / "axe.min.js"

RUN = """async (impacts) => {
  const result = await window.axe.run(document, { resultTypes: ['violations'] });
  return result.violations.filter(v => impacts.includes(v.impact)).map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => ({ target: n.target.join(' '),
                                            summary: n.failureSummary })),
    count: v.nodes.length }));
}"""


def _installed_version() -> str | None:
    package = CACHE / "node_modules" / "axe-core" / "package.json"
    if not package.is_file():
        return None
    import json
    version: str = json.loads(package.read_text())["version"]
    return version


@lru_cache(maxsize=1)
def axe_source() -> str:
    if _installed_version() != AXE_VERSION:
        npm = shutil.which("npm")
        require(npm is not None, "npm (to install axe-core for the accessibility tests)")
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([str(npm), "install", "--prefix", str(CACHE), "--no-audit",
                               "--no-fund", "--no-save", f"axe-core@{AXE_VERSION}"],
                              capture_output=True, text=True, timeout=300, check=False)
        require(done.returncode == 0 and AXE_JS.is_file(),
                f"axe-core {AXE_VERSION} from npm (npm said: {done.stderr.strip()[-400:]})")
    return AXE_JS.read_text(encoding="utf-8")


def violations(page: Any,
               impacts: tuple[str, ...] = ("critical", "serious")) -> list[dict[str, Any]]:
    """axe-core's violations of `impacts` on what `page` shows now."""
    if not page.evaluate("() => !!window.axe"):
        page.evaluate(f"() => {{ {axe_source()}\n; return true; }}")
    found: list[dict[str, Any]] = page.evaluate(RUN, list(impacts))
    return found
