"""reads: tree nodes per sibling list and band of positions

The table the sibling triggers keep (fonds.storage.siblings installs them at start on the node
tables and counts their existing rows then): a node's logical position from a few hundred band
rows, not a count of every sibling before it.

Revision ID: 0011_sibling_counts
Revises: 0010_schema_defaults
Create Date: 2026-11-26 18:00:00.000000
"""

from alembic import op
import sqlalchemy as sa


revision = '0011_sibling_counts'
down_revision = '0010_schema_defaults'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sibling_bucket',
    sa.Column('node_type', sa.String(length=64), nullable=False),
    sa.Column('root_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('parent_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('bucket', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('n', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('node_type', 'root_id', 'parent_id', 'bucket', name=op.f('pk_sibling_bucket')),
    sqlite_with_rowid=False,
    )


def downgrade() -> None:
    """The triggers (and on PostgreSQL their functions) write to sibling_bucket: they go with it."""
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        rows = conn.exec_driver_sql(
            "SELECT tgname, tgrelid::regclass::text FROM pg_trigger WHERE tgname LIKE 'fonds_siblings_%%' "
            "AND tgrelid::regclass::text NOT LIKE '%%.%%'"
        ).all()
        for name, table in rows:
            conn.exec_driver_sql(f'DROP TRIGGER IF EXISTS "{name}" ON {table}')
        functions = conn.exec_driver_sql(
            "SELECT proname FROM pg_proc WHERE proname LIKE 'fonds_siblings_%%' AND pronamespace = current_schema()::regnamespace"
        ).all()
        for (function,) in functions:
            conn.exec_driver_sql(f'DROP FUNCTION IF EXISTS "{function}"()')
    else:
        rows = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'fonds_siblings_%'").all()
        for (name,) in rows:
            conn.exec_driver_sql(f'DROP TRIGGER IF EXISTS "{name}"')
    op.drop_table('sibling_bucket')
