"""Archival-object tree positions: `resource` is the root, `parent` the node above; `position`
is the 0-based index among siblings, kept contiguous in a column. `position` and `ancestors`
are computed at read time and spliced into the stored JSON, so moving or re-levelling a node
within its resource never rewrites its descendants. Moving it to another resource does: each
descendant stores its `resource` (as ArchivesSpace's TreeNodes#set_root rewrites the subtree)."""

from __future__ import annotations

import logging

from sqlalchemy import and_, func, select, update

from fonds.errors import Conflict, Invalid
from fonds.records.rewrite import rewrite_records
from fonds.storage import records as store
from fonds.storage.chunks import chunked, select_in

log = logging.getLogger("fonds.records.tree")

NODE = "archival_object"
# The root's record type, and the field holding each node's ref to it.
ROOT = "resource"


def _group(table, resource_id, parent_id):
    return and_(
        table.c.resource_id.is_(None) if resource_id is None else table.c.resource_id == resource_id,
        table.c.parent_id.is_(None) if parent_id is None else table.c.parent_id == parent_id,
    )


def _shift(conn, table, group, *, exclude: int, start: int, stop: int | None, delta: int) -> None:
    where = [group, table.c.id != exclude, table.c.position >= start]
    if stop is not None:
        where.append(table.c.position <= stop)
    conn.execute(update(table).where(*where).values(position=table.c.position + delta))


def _count(conn, table, group, exclude: int) -> int:
    return conn.execute(select(func.count()).select_from(table).where(group, table.c.id != exclude)).scalar_one()


def _ref_id(ctx, ref: dict | None) -> int | None:
    if not ref:
        return None
    return ctx.registry.parse_uri(ref["ref"]).record_id


OWN_ANCESTOR = "Can't make a parent into its own child"


def _check_not_own_descendant(conn, table, node_id: int, parent_id: int) -> None:
    """Refuse a parent that is the node itself or below it. Walks up from the parent; a cycle
    already stored above it (which no write allows) ends the walk instead of looping for ever."""
    current, seen = parent_id, set()
    while current is not None and current not in seen:
        if current == node_id:
            raise Conflict(OWN_ANCESTOR)
        seen.add(current)
        current = conn.execute(select(table.c.parent_id).where(table.c.id == current)).scalar_one_or_none()
    if current is not None:
        raise Conflict(f"{OWN_ANCESTOR}: the new parent's ancestors form a cycle")


def place(ctx, doc: dict) -> None:
    """Set the tree columns of the record being written, shifting siblings to keep positions contiguous;
    when its resource changes its descendants go along."""
    conn, table = ctx.conn, ctx.tables[NODE]
    resource_id, parent_id = _ref_id(ctx, doc.get("resource")), _ref_id(ctx, doc.get("parent"))
    if parent_id is not None:
        # On create too: the id is allocated before the refs are checked, so a client may name it.
        _check_not_own_descendant(conn, table, ctx.record_id, parent_id)
        parent_resource = conn.execute(select(table.c.resource_id).where(table.c.id == parent_id)).scalar_one()
        if resource_id is None and parent_resource is not None:
            resource_id = parent_resource
            doc["resource"] = {"ref": ctx.registry["resource"].uri(resource_id, ctx.repo_id)}
            ctx.stale = True
        elif parent_resource != resource_id:
            raise Invalid({"parent": ["Parent must belong to the same resource as the record"]})
    requested = doc.pop("position", None)
    group = _group(table, resource_id, parent_id)
    old = ctx.existing
    if old is not None and (old.resource_id, old.parent_id) == (resource_id, parent_id):
        last = _count(conn, table, group, ctx.record_id)
        position = old.position if requested is None else max(0, min(int(requested), last))
        if position > old.position:
            _shift(conn, table, group, exclude=ctx.record_id, start=old.position + 1, stop=position, delta=-1)
        elif position < old.position:
            _shift(conn, table, group, exclude=ctx.record_id, start=position, stop=old.position - 1, delta=1)
    else:
        if old is not None:
            _shift(
                conn,
                table,
                _group(table, old.resource_id, old.parent_id),
                exclude=ctx.record_id,
                start=old.position + 1,
                stop=None,
                delta=-1,
            )
        last = _count(conn, table, group, ctx.record_id)
        position = last if requested is None else max(0, min(int(requested), last))
        _shift(conn, table, group, exclude=ctx.record_id, start=position, stop=None, delta=1)
    ctx.columns.update(resource_id=resource_id, parent_id=parent_id, position=position)
    if old is not None and old.resource_id != resource_id:
        _move_descendants(ctx, doc["ref_id"], resource_id)


def _descendants(conn, table, root_id: int) -> list:
    """(id, ref_id) of every node below `root_id`, breadth-first, locked: they are about to be rewritten."""
    found, frontier, seen = [], [root_id], {root_id}
    while frontier:
        level = select_in(
            conn, lambda chunk: select(table.c.id, table.c.ref_id).where(table.c.parent_id.in_(chunk)).with_for_update(), frontier
        )
        # `seen`: a stored cycle must not make the walk endless.
        level = [row for row in level if row.id not in seen]
        seen.update(row.id for row in level)
        found += level
        frontier = [row.id for row in level]
    return found


def _taken_by_others(conn, table, resource_id: int, ref_ids: list[str], moving: dict) -> bool:
    found = conn.execute(select(table.c.id).where(table.c.resource_id == resource_id, table.c.ref_id.in_(ref_ids))).scalars()
    return any(record_id not in moving for record_id in found)


def _check_ref_ids_free(ctx, table, resource_id: int | None, moving: dict[int, str | None]) -> None:
    """Refuse the move, before anything is rewritten, if a moving ref_id is taken in the target resource."""
    if resource_id is None:
        return  # unattached nodes never collide (NULLs, as in the unique index)
    ref_ids = [ref_id for ref_id in moving.values() if ref_id is not None]
    # A subtree left split across resources (by the bug this move fixes) may bring equal ref_ids together.
    split = len(set(ref_ids)) != len(ref_ids)
    if split or any(_taken_by_others(ctx.conn, table, resource_id, chunk, moving) for chunk in chunked(ref_ids)):
        key = next(k for k in ctx.record_type.unique_keys if "ref_id" in k.columns)
        raise Invalid({key.field: [key.message]})


def _move_descendants(ctx, ref_id: str, resource_id: int | None) -> None:
    """Give every descendant of the node being written its new resource: column, JSON, link, change row."""
    conn, table = ctx.conn, ctx.tables[NODE]
    nodes = _descendants(conn, table, ctx.record_id)
    if not nodes:
        return
    _check_ref_ids_free(ctx, table, resource_id, {ctx.record_id: ref_id, **dict(nodes)})
    for chunk in chunked([row.id for row in nodes]):
        _set_root(ctx, table, chunk, resource_id)


def _set_root(ctx, table, ids: list[int], resource_id: int | None) -> None:
    """Rewrite one batch of descendants as an update would: new lock_version and stamps, one change row each."""
    root = {"ref": ctx.registry[ROOT].uri(resource_id, ctx.repo_id)} if resource_id is not None else None

    def set_root(doc: dict) -> None:
        if root is None:
            doc.pop(ROOT, None)
        else:
            doc[ROOT] = root

    rewrite_records(
        ctx.conn, ctx.record_type, ids, now=ctx.now, username=ctx.actor, edit=set_root, columns={"resource_id": resource_id}, by_user=True
    )
    store.retarget_links(ctx.conn, ctx.tables, source_type=NODE, source_ids=ids, field=ROOT, target_type=ROOT, target_id=resource_id)


def close_gaps(conn, rows, deleted: set[tuple[str, int]]) -> None:
    """Close the sibling gaps left by deleted nodes whose parent stays."""
    table = conn.info["fonds_tables"][NODE]
    for row in sorted(rows, key=lambda r: -(r.position or 0)):
        parent = (NODE, row.parent_id) if row.parent_id is not None else ("resource", row.resource_id)
        if parent in deleted or row.position is None:
            continue
        _shift(conn, table, _group(table, row.resource_id, row.parent_id), exclude=row.id, start=row.position + 1, stop=None, delta=-1)


def read_extras(conn, rows) -> list[dict]:
    tables = conn.info["fonds_tables"]
    table, resources = tables[NODE], tables["resource"]
    known = {row.id: row for row in rows}
    wanted = {row.parent_id for row in rows if row.parent_id is not None} - known.keys()
    columns = (table.c.id, table.c.parent_id, table.c.level, table.c.resource_id, table.c.repo_id)
    while wanted:
        found = select_in(conn, lambda chunk: select(*columns).where(table.c.id.in_(chunk)), sorted(wanted))
        known.update((row.id, row) for row in found)
        wanted = {row.parent_id for row in found if row.parent_id is not None} - known.keys()
    resource_ids = sorted({row.resource_id for row in rows if row.resource_id is not None})
    levels = dict(select_in(conn, lambda chunk: select(resources.c.id, resources.c.level).where(resources.c.id.in_(chunk)), resource_ids))
    return [{"position": row.position, "ancestors": _ancestors(row, known, levels)} for row in rows]


def _ancestors(row, known: dict, levels: dict) -> list[dict]:
    """The node's ancestors, nearest first, ending with its resource. A cycle (which no write
    allows, but a database edited by hand may hold) ends the walk where it closes: a read must
    always answer."""
    ancestors, seen = [], {row.id}
    current = known.get(row.parent_id)
    while current is not None:
        if current.id in seen:
            log.warning("archival object %s has a cycle among its ancestors at %s; the walk stops there", row.id, current.id)
            break
        seen.add(current.id)
        ancestors.append(_ancestor(f"/repositories/{current.repo_id}/archival_objects/{current.id}", current.level))
        current = known.get(current.parent_id)
    if row.resource_id is not None:
        ancestors.append(_ancestor(f"/repositories/{row.repo_id}/resources/{row.resource_id}", levels.get(row.resource_id)))
    return ancestors


def _ancestor(uri: str, level: str | None) -> dict:
    return {"ref": uri, "level": level} if level else {"ref": uri}
