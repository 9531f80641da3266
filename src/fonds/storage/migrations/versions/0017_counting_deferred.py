"""writes: a bulk write's rows counted grouped, not one at a time by the triggers (SQLite)

The table the insert triggers of the record counts and sibling bands look at (their new versions
are installed at start, fonds.storage.counts and fonds.storage.siblings): while it holds a row, in
the transaction of a bulk write, they leave the rows to that write, which counts them grouped by
block and band (fonds.storage.deferred_counts). Created on PostgreSQL too, where the triggers
count each statement's rows grouped already, so that both databases have the same tables.

Revision ID: 0017_counting_deferred
Revises: 0016_tree_sibling_indexes
Create Date: 2026-12-07 21:00:00.000000
"""

import sqlalchemy as sa
from alembic import op


revision = '0017_counting_deferred'
down_revision = '0016_tree_sibling_indexes'
branch_labels = None
depends_on = None

# The versions of the counting and band triggers that look at the table.
TRIGGER_VERSIONS = ('fonds_count_v4_%', 'fonds_siblings_v2_%')


def upgrade() -> None:
    op.create_table(
        'counting_deferred',
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_counting_deferred')),
    )


def downgrade() -> None:
    # The triggers of the versions that look at the table go with it (the earlier versions are
    # installed again at the next start, and the counts and bands recounted).
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        rows = conn.exec_driver_sql(
            "SELECT tgname, tgrelid::regclass::text FROM pg_trigger WHERE tgname LIKE ANY (%(versions)s) "
            "AND tgrelid::regclass::text NOT LIKE '%%.%%'",
            {"versions": list(TRIGGER_VERSIONS)},
        ).all()
        for name, table in rows:
            conn.exec_driver_sql(f'DROP TRIGGER IF EXISTS "{name}" ON {table}')
        for name, _ in rows:
            if name.startswith("fonds_siblings_") and name.endswith("_ins"):
                for step in ("added", "removed", "moved"):
                    conn.exec_driver_sql(f'DROP FUNCTION IF EXISTS "{name[:-4]}_{step}"()')
    else:
        for pattern in TRIGGER_VERSIONS:
            rows = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE ?", (pattern,)).all()
            for (name,) in rows:
                conn.exec_driver_sql(f'DROP TRIGGER IF EXISTS "{name}"')
    op.drop_table('counting_deferred')
