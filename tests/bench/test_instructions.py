"""The instruction counter the sweep bench holds the project against its floor with
(bench/helpers/instructions.py): a second process under callgrind, each call counted alone."""

from __future__ import annotations

import pytest

from bench.helpers import instructions

SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from bench.helpers import instructions
counter = instructions.Counter(instructions.out_file())
small = counter.count(lambda: sum(range(10_000)))
large = counter.count(lambda: sum(range(100_000)))
instructions.report({{"small": [small], "large": [large]}})
"""


@pytest.mark.skipif(instructions.available() is not None, reason="valgrind is not installed")
def test_each_call_is_counted_alone_under_callgrind(tmp_path) -> None:
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    script = tmp_path / "count.py"
    script.write_text(SCRIPT.format(root=root))
    found = instructions.counted([str(script)], timeout_s=600)
    small, large = found["small"][0], found["large"][0]
    assert 0 < small < large  # ten times the loop: more, and not the switching's cost alone
    assert large > 5 * small


def test_a_run_that_reports_nothing_says_so(tmp_path) -> None:
    if instructions.available() is not None:
        pytest.skip("valgrind is not installed")
    script = tmp_path / "quiet.py"
    script.write_text("print('no figures')\n")
    with pytest.raises(RuntimeError, match="without figures"):
        instructions.counted([str(script)], timeout_s=600)


def test_out_file_is_only_known_to_the_counted_child(monkeypatch) -> None:
    monkeypatch.delenv("PEERWATCH_CALLGRIND_OUT", raising=False)
    with pytest.raises(RuntimeError, match="--count-instructions"):
        instructions.out_file()
