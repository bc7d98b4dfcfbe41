"""The test catalogue: every transfer test the probe knows, what it names and measures.

Clients (the dashboard, a scheduler's tooling) learn the tests here instead of keeping their
own list, so a test added to the wire schema (`probes/report.py`) appears everywhere at once.
The dashboard gets the same list inside `index.html` (`catalog_json`), saving a request.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from peerwatch.probes.report import TEST_ABOUT, TestName, test_scope, unit_of

router = APIRouter(prefix="/api/v1", tags=["read"])


class TestOut(BaseModel):
    __test__ = False  # not a pytest class

    name: TestName
    scope: Literal["pair", "gpu", "set"] = Field(
        description="pair: src -> dst; gpu: one GPU (src); set: a GPU set (allreduce)")
    unit: str = Field(description="B/s or s (latency: lower is better)")
    about: str


class TestsResponse(BaseModel):
    tests: list[TestOut]


def catalog() -> TestsResponse:
    return TestsResponse(tests=[TestOut(name=t, scope=test_scope(t),
                                        unit=unit_of(t).value, about=TEST_ABOUT[t])
                                for t in TestName])


@lru_cache(maxsize=1)
def catalog_json() -> str:
    """The catalogue as compact JSON, for the page's <meta name="peerwatch-tests">."""
    return json.dumps(catalog().model_dump(mode="json")["tests"], separators=(",", ":"))


@router.get("/tests", response_model=TestsResponse, summary="Every transfer test, what it measures")
def list_tests() -> TestsResponse:
    return catalog()
