"""readback: schema defaults in stored records

Records are now written with ArchivesSpace's schema defaults filled in (every array property
present, empty when there is none; booleans and other properties with a schema `default` at it;
see fonds/records/defaults.py), so that reads keep serving the stored bytes unchanged. This fills
them into the records stored before, type by type, in batches. Only absent keys are added, with
the values ArchivesSpace would have shown for them: the records' content is unchanged, so their
lock_version stays and no change is logged. The search index rebuilds itself at the next start
(its document version moved), so the `json` copies in search results follow.

Revision ID: 0010_schema_defaults
Revises: 0009_listing_counts
Create Date: 2026-11-24 07:00:00.000000
"""

from alembic import op
import orjson
import sqlalchemy as sa


revision = '0010_schema_defaults'
down_revision = '0009_listing_counts'
branch_labels = None
depends_on = None

BATCH = 1000


def upgrade() -> None:
    # The current schemas and declarations: the defaults to fill are those this code writes.
    from fonds.model import REGISTRY
    from fonds.records.defaults import Defaults
    from fonds.records.schemas import SchemaSet, load_schema_files

    bind = op.get_bind()
    present = set(sa.inspect(bind).get_table_names())
    defaults = Defaults(SchemaSet(load_schema_files(), {t.name for t in REGISTRY}))
    for record_type in REGISTRY:
        if record_type.name in present:
            _fill_table(bind, defaults, record_type.name, record_type.read_fields)


def _fill_table(bind, defaults, name: str, read_fields) -> None:
    table = sa.table(name, sa.column("id", sa.Integer), sa.column("json", sa.LargeBinary))
    statement = sa.update(table).where(table.c.id == sa.bindparam("b_id")).values(json=sa.bindparam("b_json"))
    last = 0
    while True:
        rows = bind.execute(sa.select(table.c.id, table.c.json).where(table.c.id > last).order_by(table.c.id).limit(BATCH)).all()
        if not rows:
            return
        changed = []
        for row in rows:
            doc = orjson.loads(row.json)
            if defaults.fill_stored(name, doc, skip=read_fields):
                changed.append({"b_id": row.id, "b_json": orjson.dumps(doc)})
        if changed:
            bind.execute(statement, changed)
        last = rows[-1].id


def downgrade() -> None:
    # The filled keys are what earlier versions would have shown had they filled defaults: kept.
    pass
