"""The test catalogue: every transfer test the probe knows, what it names and measures.

Clients (the dashboard, a scheduler's tooling) learn the tests here instead of keeping their
own list, so a kind declared in `probes/test_kinds.py` appears everywhere at once.
The dashboard gets the same list inside `index.html` (`catalog_json`), saving a request.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from peerwatch.probes.report import TestName
from peerwatch.probes.test_kinds import TestKind, kinds

router = APIRouter(prefix="/api/v1", tags=["read"])


class TestOut(BaseModel):
    __test__ = False  # not a pytest class

    name: TestName
    scope: Literal["pair", "gpu", "set", "host_pair"] = Field(
        description="pair: src -> dst; gpu: one GPU (src); set: a GPU set (allreduce); "
                    "host_pair: src on the host -> dst on peer_host (GET /api/v1/network/pairs)")
    unit: str = Field(description="B/s or s (latency: lower is better)")
    about: str
    label: str = Field(description="a short title for a column of this test")


class TestsResponse(BaseModel):
    tests: list[TestOut]


def catalog() -> TestsResponse:
    return _catalog(kinds())


def _catalog(table: tuple[TestKind, ...]) -> TestsResponse:
    return TestsResponse(tests=[TestOut(name=TestName(k.name), scope=k.scope,
                                        unit=k.unit.value, about=k.about,
                                        label=k.label or k.name)
                                for k in table])


def catalog_json() -> str:
    """The catalogue as compact JSON, for the page's <meta name="peerwatch-tests">."""
    return _catalog_json(kinds())


@lru_cache(maxsize=1)
def _catalog_json(table: tuple[TestKind, ...]) -> str:
    """Kept per table, so a kind declared at run time is on the next page served."""
    return json.dumps(_catalog(table).model_dump(mode="json")["tests"], separators=(",", ":"))


@router.get("/tests", response_model=TestsResponse, summary="Every transfer test, what it measures")
def list_tests() -> TestsResponse:
    return catalog()
