"""judged_tests keeps half of each page free (PostgreSQL fillfactor 50): every sweep
rewrites each of a host's judged (pair, test) rows (their times and packed state), and with
full pages no new version fits beside the old one, so every update was a non-HOT one (a new
primary-key entry per row, ~3x the WAL, the table and its index growing until a vacuum);
with room on the page the update stays on it (HOT), and the version it replaces is pruned
by the next sweep's read, vacuum or not. Pages written before keep their layout until
rewritten (VACUUM FULL); SQLite has no such setting.

Revision ID: 0022
Revises: 0021
"""
from typing import Sequence, Union

from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0022'
down_revision: Union[str, Sequence[str], None] = '0021'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

FILLFACTOR = 50


def upgrade() -> None:
    """Upgrade schema."""
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(f'ALTER TABLE judged_tests SET (fillfactor = {FILLFACTOR})')


def downgrade() -> None:
    """Downgrade schema."""
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('ALTER TABLE judged_tests RESET (fillfactor)')
