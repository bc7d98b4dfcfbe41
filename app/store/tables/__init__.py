"""The tables (SQLAlchemy 2 typed ORM), one module per concern; `migrations/` creates them.

Importing this package imports every table module, so `Base.metadata` (`store/base.py`) is the
whole schema for Alembic's autogenerate check and the tests' cleanup: import a table from its
own module, and this package where the whole metadata matters.
"""

from peerwatch.app.store.base import Base
from peerwatch.app.store.tables import (  # noqa: F401 (each registers its tables on Base)
    alerts,
    drain,
    drain_lease,
    events,
    fleet,
    history,
    inventory,
    jobs,
    judged,
    network,
    nics,
    received,
)

metadata = Base.metadata  # the whole schema: every module above has registered its tables
