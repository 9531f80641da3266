"""writes: a tree node's refs to its root and parent kept in its columns only

An archival object's `resource` and `parent` refs (a digital object component's `digital_object`
and `parent`) were kept twice: in its columns (`resource_id`, `parent_id`) and as record_link
rows. The columns are what every tree read, move and delete goes by; the rows were written with
each node (three index entries each: over half the link rows of a bulk load) and rewritten with
each move. A delete now takes a root's or a node's nodes from the columns (fonds.records.deletion).

Downgrade writes the rows back from the columns.

Revision ID: 0014_tree_refs_in_columns
Revises: 0013_clustered_record_counts
Create Date: 2026-12-06 20:30:00.000000
"""

from alembic import op


revision = '0014_tree_refs_in_columns'
down_revision = '0013_clustered_record_counts'
branch_labels = None
depends_on = None

# (node type, its root type): the trees of this revision.
TREES = (("archival_object", "resource"), ("digital_object_component", "digital_object"))


def upgrade() -> None:
    for node, root in TREES:
        op.execute(f"DELETE FROM record_link WHERE source_type = '{node}' AND field IN ('{root}', 'parent')")


def downgrade() -> None:
    for node, root in TREES:
        for field, target, column in ((root, root, f"{root}_id"), ("parent", node, "parent_id")):
            op.execute(
                "INSERT INTO record_link (source_type, source_id, field, path, target_type, target_id) "
                f"SELECT '{node}', id, '{field}', '{field}', '{target}', {column} FROM {node} WHERE {column} IS NOT NULL"
            )
