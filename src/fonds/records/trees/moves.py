"""Moving existing nodes within their tree: `POST …/<node>/<id>/parent?parent=&position=` and
`POST …/<root or node>/<id>/accept_children?children[]=&position=`.

A moved node's stored JSON changes (its parent ref), so it is rewritten: new lock_version (a
client holding the old one gets 409 instead of moving it back), stamps, a change row. The
nodes below it keep their JSON; their computed ancestors change, so each gets a change row."""

from __future__ import annotations

from sqlalchemy import bindparam, update

from fonds.errors import Conflict, Invalid, NotFound
from fonds.records.rewrite import rewrite_records
from fonds.records.trees import hierarchy, positions
from fonds.records.trees.placement import OWN_ANCESTOR, log_below, same_root_message, siblings_of
from fonds.storage import records as store

# Children per accept_children request: they are given in the query string anyway.
MAX_CHILDREN = 10_000


def updated(record_id: int, lock_version: int) -> dict:
    """ArchivesSpace's answer to a tree change with no record body."""
    return {"status": "Updated", "id": record_id, "lock_version": lock_version, "stale": None}


def set_parent(
    conn, registry, node_type, node_id: int, repo_id: int, *, parent_id: int | None, position: int | None, actor: str, now
) -> dict:
    spec = node_type.tree
    table = conn.info["fonds_tables"][spec.node]
    row = store.fetch(conn, table, node_id, repo_id=repo_id, for_update=True)
    if row is None:
        raise NotFound(node_type.not_found())
    root_id = getattr(row, spec.root_column)
    if parent_id is not None:
        _check_parent(conn, registry, spec, root_id, parent_id, repo_id, field="parent", moving={node_id})
    target = siblings_of(spec, table, root_id, parent_id)
    same_list = parent_id == row.parent_id
    lists = [target] if same_list else [target, siblings_of(spec, table, root_id, row.parent_id)]
    positions.lock_siblings(conn, conn.info["fonds_tables"], spec, lists)
    if position is not None:
        slot = positions.slot_at(conn, target, max(0, position), exclude=node_id)
    else:
        slot = row.position if same_list else positions.append_slot(conn, target)
    _relocate(conn, registry, spec, [row], parent_id, [slot], actor=actor, now=now)
    return updated(node_id, row.lock_version + 1)


def accept_children(conn, registry, target_type, target_id: int, repo_id: int, *, uris: list[str], position: int, actor: str, now) -> dict:
    """Move the nodes at `uris`, in that order, under the target (a root: to its top level)
    as one block starting at logical index `position` among the target's other children."""
    spec = target_type.tree
    tables = conn.info["fonds_tables"]
    table = tables[spec.node]
    target = store.fetch(conn, tables[target_type.name], target_id, repo_id=repo_id, for_update=True)
    if target is None:
        raise NotFound(target_type.not_found())
    root_id, parent_id = (target_id, None) if target_type.name == spec.root else (getattr(target, spec.root_column), target_id)
    ids = _node_ids(registry, spec, uris, repo_id)
    rows = {row.id: row for row in store.fetch_many(conn, table, ids)}
    for uri, node_id in zip(uris, ids):
        if node_id not in rows or rows[node_id].repo_id != repo_id:
            raise Invalid({"children": [f"{uri} does not exist"]})
        if getattr(rows[node_id], spec.root_column) != root_id:
            raise Invalid({"children": [f"{uri} belongs to another {spec.root}: move it with an update of its {spec.root_field}"]})
    if parent_id is not None:
        _check_parent(conn, registry, spec, root_id, parent_id, repo_id, field="children", moving=set(ids))
    target_list = siblings_of(spec, table, root_id, parent_id)
    old_lists = {row.parent_id for row in rows.values()} - {parent_id}
    positions.lock_siblings(conn, tables, spec, [target_list, *(siblings_of(spec, table, root_id, old) for old in old_lists)])
    moving = set(ids)
    others = [row for row in positions.ordered_ids(conn, target_list) if row.id not in moving]
    index = min(max(0, position), len(others))
    left = others[index - 1].position if index > 0 else None
    right = others[index].position if index < len(others) else None
    slots = positions.slots_between(conn, target_list, left, right, len(ids))
    _relocate(conn, registry, spec, [rows[i] for i in ids], parent_id, slots, actor=actor, now=now)
    return updated(target_id, target.lock_version)


def _node_ids(registry, spec, uris: list[str], repo_id: int) -> list[int]:
    if not uris:
        raise Invalid({"children": ["Parameter required but no value provided"]})
    if len(uris) > MAX_CHILDREN:
        raise Invalid({"children": [f"At most {MAX_CHILDREN} children per request (you gave {len(uris)})"]})
    ids = []
    for uri in uris:
        parsed = registry.parse_uri(uri)
        if parsed is None or parsed.record_type.name != spec.node or parsed.repo_id != repo_id:
            raise Invalid({"children": [f"{uri} is not the URI of a {spec.node} in repository {repo_id}"]})
        ids.append(parsed.record_id)
    if len(set(ids)) != len(ids):
        raise Invalid({"children": ["Each child may be given once"]})
    return ids


def _check_parent(conn, registry, spec, root_id, parent_id: int, repo_id: int, *, field: str, moving: set[int]) -> None:
    table = conn.info["fonds_tables"][spec.node]
    parent = store.fetch(conn, table, parent_id, repo_id=repo_id)
    if parent is None:
        raise Invalid({"parent": [f"{registry[spec.node].model_name} {parent_id} does not exist in repository {repo_id}"]})
    if getattr(parent, spec.root_column) != root_id:
        raise Invalid({"parent": [same_root_message(spec)]})
    if hierarchy.would_cycle(conn, table, moving, parent_id):
        raise Conflict(OWN_ANCESTOR)


def _relocate(conn, registry, spec, rows, parent_id: int | None, slots: list[int], *, actor: str, now) -> None:
    """Put `rows` under `parent_id` at physical `slots`: JSON, columns, links, change rows."""
    node_type = registry[spec.node]
    tables = conn.info["fonds_tables"]
    table = tables[spec.node]
    ids = [row.id for row in rows]
    parent_ref = {"ref": node_type.uri(parent_id, rows[0].repo_id)} if parent_id is not None else None

    def set_parent_ref(doc: dict) -> None:
        if parent_ref is None:
            doc.pop("parent", None)
        else:
            doc["parent"] = parent_ref

    rewrite_records(conn, node_type, ids, now=now, username=actor, edit=set_parent_ref, columns={"parent_id": parent_id}, by_user=True)
    statement = update(table).where(table.c.id == bindparam("b_id")).values(position=bindparam("b_position"))
    for chunk in store.chunks(list(zip(ids, slots)), 1000):
        conn.execute(statement, [{"b_id": node_id, "b_position": slot} for node_id, slot in chunk])
    log_below(conn, registry, spec, [row.id for row in rows if row.parent_id != parent_id], now)
