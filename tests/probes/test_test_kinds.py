"""The kinds table (`probes/test_kinds.py`) and the wire schema's `TestName` name the same
kinds in the same order, each name fits the stored column, and a name declared nowhere is
still refused."""

from __future__ import annotations

import pytest

from peerwatch.probes.report import TestName, declared_tests
from peerwatch.probes.test_kinds import TEST_KINDS

STORED_TEST_NAME = 16  # characters: the `test` column of the measurement and judged tables


def test_every_member_of_the_wire_enum_has_its_row_in_order() -> None:
    assert [k.name for k in TEST_KINDS] == [t.value for t in TestName]
    assert declared_tests() == tuple(TestName)
    assert all(len(k.name) <= STORED_TEST_NAME for k in TEST_KINDS)


def test_a_name_no_row_declares_is_not_a_test() -> None:
    with pytest.raises(ValueError):
        TestName("zz_undeclared")
