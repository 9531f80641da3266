"""trees: a node table's sibling lists indexed by parent, and its top level by root

Each tree node table (archival objects, digital object components) had an index on `parent_id`
and one on (root, `parent_id`, `position`): a new node went into both. Now the sibling lists
below a node are read from one index on (`parent_id`, `position`), and each tree's top level
from one on (root, `parent_id`, `position`) that holds the top-level nodes only, so the other
nodes (all but a few of a tree's) go into one index instead of two.

Revision ID: 0016_tree_sibling_indexes
Revises: 0015_no_mtime_indexes
Create Date: 2026-12-07 00:10:00.000000
"""

import sqlalchemy as sa
from alembic import op


revision = '0016_tree_sibling_indexes'
down_revision = '0015_no_mtime_indexes'
branch_labels = None
depends_on = None

# Each tree node table of this revision, its root column, and the names of its (root, parent,
# position) index and of the partial one replacing it (cut to PostgreSQL's 63 bytes where longer,
# as `tables.index_name` cuts them).
NODES = (
    (
        "archival_object",
        "resource_id",
        "ix_archival_object_resource_id_parent_id_position",
        "ix_archival_object_resource_id_parent_id_position_partial",
    ),
    (
        "digital_object_component",
        "digital_object_id",
        "ix_digital_object_component_digital_object_id_parent_i_f4920b9c",
        "ix_digital_object_component_digital_object_id_parent_i_535bf40a",
    ),
)
TOP_LEVEL = "parent_id IS NULL"


def upgrade() -> None:
    for table, root, composite, top_level in NODES:
        op.drop_index(f"ix_{table}_parent_id", table_name=table)
        op.drop_index(composite, table_name=table)
        op.create_index(f"ix_{table}_parent_id_position", table, ["parent_id", "position"])
        op.create_index(
            top_level,
            table,
            [root, "parent_id", "position"],
            sqlite_where=sa.text(TOP_LEVEL),
            postgresql_where=sa.text(TOP_LEVEL),
        )


def downgrade() -> None:
    for table, root, composite, top_level in NODES:
        op.drop_index(top_level, table_name=table)
        op.drop_index(f"ix_{table}_parent_id_position", table_name=table)
        op.create_index(f"ix_{table}_parent_id", table, ["parent_id"])
        op.create_index(composite, table, [root, "parent_id", "position"])
