"""judged_tests.state packed: fixed-width binary (app/store/packed.py) instead of a JSON
tree per row, which every sweep's judgement parsed and encoded again for each of a host's
~416 judged (pair, test)s.

Upgrade packs every stored state (same values: blocks, part-block, newest judged,
contended and failed samples, the baseline summary); downgrade turns them back into
0013's JSON. Rows with no state stay null (seeded from history at their next sweep).

Revision ID: 0019
Revises: 0018
"""
from typing import Any, Callable, Sequence, Union

from alembic import op
import sqlalchemy as sa

from peerwatch.app.store.packed import from_doc, to_doc


revision: str = '0019'
down_revision: Union[str, Sequence[str], None] = '0018'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

KEY = ('host_id', 'test', 'src', 'dst')


def _convert(new_type: sa.types.TypeEngine, convert: Callable[[Any], Any]) -> None:
    """Add `state_new` of `new_type`, fill it with `convert(state)` row by row, then drop
    `state` and give `state_new` its name."""
    with op.batch_alter_table('judged_tests') as batch:
        batch.add_column(sa.Column('state_new', new_type, nullable=True))
    bind = op.get_bind()
    old_type = sa.LargeBinary() if isinstance(new_type, sa.JSON) else sa.JSON()
    table = sa.table('judged_tests', *(sa.column(k) for k in KEY),
                     sa.column('state', old_type), sa.column('state_new', new_type))
    rows = bind.execute(sa.select(table).where(table.c.state.is_not(None))).mappings().all()
    update = (sa.update(table).where(*(table.c[k] == sa.bindparam(f'k_{k}') for k in KEY))
              .values(state_new=sa.bindparam('value')))
    params = [{**{f'k_{k}': r[k] for k in KEY}, 'value': convert(r['state'])} for r in rows]
    if params:
        bind.execute(update, params)
    with op.batch_alter_table('judged_tests') as batch:
        batch.drop_column('state')
    with op.batch_alter_table('judged_tests') as batch:
        batch.alter_column('state_new', new_column_name='state')


def upgrade() -> None:
    _convert(sa.LargeBinary(), from_doc)


def downgrade() -> None:
    _convert(sa.JSON(), lambda data: to_doc(bytes(data)))
