"""links: bulk writes' links kept apart until merged in bulk (SQLite)

`record_link_recent` holds the links SQLite's bulk writes make until they are merged into
`record_link` (fonds.storage.links), and the view `record_link_all` shows both, for every read of
links. Created on PostgreSQL too, where it stays empty, so that both databases have the same
tables; the view is SQLite's alone.

Revision ID: 0018_recent_links
Revises: 0017_counting_deferred
Create Date: 2026-12-08 02:30:00.000000
"""

import sqlalchemy as sa
from alembic import op


revision = '0018_recent_links'
down_revision = '0017_counting_deferred'
branch_labels = None
depends_on = None

COLUMNS = "id, source_type, source_id, field, path, target_type, target_id"


def upgrade() -> None:
    op.create_table(
        'record_link_recent',
        sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('source_type', sa.String(length=64), nullable=False),
        sa.Column('source_id', sa.Integer(), nullable=False),
        sa.Column('field', sa.String(length=255), nullable=False),
        sa.Column('path', sa.String(length=255), nullable=False),
        sa.Column('target_type', sa.String(length=64), nullable=False),
        sa.Column('target_id', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_record_link_recent')),
    )
    with op.batch_alter_table('record_link_recent', schema=None) as batch_op:
        batch_op.create_index('ix_record_link_recent_source', ['source_type', 'source_id'], unique=False)
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"CREATE VIEW record_link_all AS SELECT {COLUMNS} FROM record_link UNION ALL SELECT {COLUMNS} FROM record_link_recent")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP VIEW IF EXISTS record_link_all")
    op.execute(f"INSERT INTO record_link ({COLUMNS}) SELECT {COLUMNS} FROM record_link_recent ORDER BY id")
    with op.batch_alter_table('record_link_recent', schema=None) as batch_op:
        batch_op.drop_index('ix_record_link_recent_source')
    op.drop_table('record_link_recent')
