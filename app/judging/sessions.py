"""The sessions of one app (the server, its ingest workers, the judge process): what they
share lives in `session.info`, made once per app. Made here, the lowest layer that knows
both shared objects: the store's inventory memo and judging's expectation cache.
"""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from peerwatch.app.judging.expectations import CACHE_KEY, ExpectationCache
from peerwatch.app.store.inventory_memo import MEMO_KEY, InventoryMemo


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions of one app; they share its inventory memo (app/store/inventory_memo.py) and
    its cache of the figures judging works out from each host's inventory
    (app/judging/expectations.py)."""
    return sessionmaker(engine, expire_on_commit=False,
                        info={MEMO_KEY: InventoryMemo(), CACHE_KEY: ExpectationCache()})
