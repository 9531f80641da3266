"""tree positions: gapped physical positions, publish and display_string columns

Archival objects' `position` becomes a physical position with gaps (records/trees/positions.py):
the old contiguous 0..n-1 become 1024, 2048, … in the same order. `publish` (archival objects
and resources) and `display_string` (archival objects) are copied from the stored JSON, so
tree views can filter and list thousands of nodes without parsing it.

Revision ID: 0004_tree_positions
Revises: 0003_enumerations
Create Date: 2026-11-23 23:15:00
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0004_tree_positions"
down_revision = "0003_enumerations"
branch_labels = None
depends_on = None

STEP = 1024
BATCH = 1000


def _copy_from_json(table_name: str, fields: tuple[str, ...]) -> None:
    conn = op.get_bind()
    table = sa.table(table_name, sa.column("id", sa.Integer), sa.column("json", sa.LargeBinary), *(sa.column(f) for f in fields))
    last = 0
    while True:
        rows = conn.execute(sa.select(table.c.id, table.c.json).where(table.c.id > last).order_by(table.c.id).limit(BATCH)).all()
        if not rows:
            return
        values = []
        for row in rows:
            doc = json.loads(row.json)
            values.append({"b_id": row.id, **{f"b_{f}": (bool(doc.get(f)) if f == "publish" else doc.get(f)) for f in fields}})
        statement = sa.update(table).where(table.c.id == sa.bindparam("b_id")).values({f: sa.bindparam(f"b_{f}") for f in fields})
        conn.execute(statement, values)
        last = rows[-1].id


def upgrade() -> None:
    with op.batch_alter_table("archival_object", schema=None) as batch_op:
        batch_op.add_column(sa.Column("publish", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("display_string", sa.String(length=8192), nullable=True))
    with op.batch_alter_table("resource", schema=None) as batch_op:
        batch_op.add_column(sa.Column("publish", sa.Boolean(), nullable=True))
    op.execute(f"UPDATE archival_object SET position = (position + 1) * {STEP} WHERE position IS NOT NULL")
    _copy_from_json("archival_object", ("publish", "display_string"))
    _copy_from_json("resource", ("publish",))


def downgrade() -> None:
    # Back to contiguous positions: each node's index among its siblings (ranked first, in a
    # materialised subquery, so no row sees another's new value).
    op.execute(
        "UPDATE archival_object SET position = ranked.rank FROM (SELECT id, row_number() OVER"
        " (PARTITION BY resource_id, parent_id ORDER BY position, id) - 1 AS rank FROM archival_object"
        " WHERE position IS NOT NULL) AS ranked WHERE archival_object.id = ranked.id"
    )
    with op.batch_alter_table("resource", schema=None) as batch_op:
        batch_op.drop_column("publish")
    with op.batch_alter_table("archival_object", schema=None) as batch_op:
        batch_op.drop_column("display_string")
        batch_op.drop_column("publish")
