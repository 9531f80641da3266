"""writes: record tables without an index on `system_mtime`

Every record table had one, written with each new record and moved with each update, and no
query read it (nothing filters or orders records by `system_mtime`: listings go by repository and
id, the search index answers the rest). A bulk load wrote one more b-tree entry a record for it.

Revision ID: 0015_no_mtime_indexes
Revises: 0014_tree_refs_in_columns
Create Date: 2026-12-06 21:15:00.000000
"""

from alembic import op


revision = '0015_no_mtime_indexes'
down_revision = '0014_tree_refs_in_columns'
branch_labels = None
depends_on = None

# The record tables of this revision.
TABLES = (
    "accession", "archival_object", "location_profile", "repository", "resource", "subject", "top_container", "vocabulary",
    "group", "user", "agent_corporate_entity", "agent_family", "agent_person", "agent_software", "event", "digital_object",
    "digital_object_component", "container_profile", "location", "term",
)


def upgrade() -> None:
    for table in TABLES:
        op.execute(f'DROP INDEX IF EXISTS "ix_{table}_system_mtime"')


def downgrade() -> None:
    for table in TABLES:
        op.create_index(f"ix_{table}_system_mtime", table, ["system_mtime"], unique=False)
