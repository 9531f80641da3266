"""Where a node sits in its tree: set when it is written (create, update), changed by a move
(the parent route, accept_children). A node's JSON keeps refs to its root and parent; its
logical `position` and its `ancestors` are computed at read time. So a move within a tree
rewrites the moved nodes only, and logs a change for each node below them (their ancestors
changed) with one INSERT … SELECT. Moving to another tree rewrites the subtree (each node's
root ref), as ArchivesSpace's TreeNodes#set_root does."""

from __future__ import annotations

from sqlalchemy import String, cast, literal, select

from fonds.errors import Conflict, Invalid
from fonds.records.rewrite import rewrite_records
from fonds.records.trees import hierarchy, positions
from fonds.records.trees.positions import Siblings
from fonds.storage import change_log
from fonds.storage import records as store
from fonds.storage.chunks import chunked as batches

OWN_ANCESTOR = "Can't make a parent into its own child"
# A sibling list whose end a batch must read again before appending to it.
STALE = "stale"


def _ref_id(registry, ref: dict | None) -> int | None:
    return registry.parse_uri(ref["ref"]).record_id if ref else None


def siblings_of(spec, table, root_id, parent_id) -> Siblings:
    return Siblings(table, spec.root_column, root_id, parent_id)


def place(ctx, doc: dict) -> None:
    """Set the tree columns of the node being written (`ctx.columns`); on update, move it."""
    spec = ctx.record_type.tree
    if ctx.existing is None and ctx.batch is not None and _appended_in_batch(ctx, spec, doc):
        return
    conn, table = ctx.conn, ctx.tables[spec.node]
    root_id, parent_id = _ref_id(ctx.registry, doc.get(spec.root_field)), _ref_id(ctx.registry, doc.get("parent"))
    if parent_id is not None:
        # A new node has nothing below it: only naming itself (its id is allocated) makes a loop.
        new_loop = ctx.existing is None and parent_id == ctx.record_id
        if new_loop or (ctx.existing is not None and hierarchy.would_cycle(conn, table, {ctx.record_id}, parent_id)):
            raise Conflict(OWN_ANCESTOR)
        parent_root = _root_of(ctx, table, spec, parent_id)
        if root_id is None and parent_root is not None:
            root_id = parent_root
            doc[spec.root_field] = {"ref": ctx.registry[spec.root].uri(root_id, ctx.repo_id)}
            ctx.stale = True
        elif parent_root != root_id:
            raise Invalid({"parent": [same_root_message(spec)]})
    requested = doc.pop("position", None)
    old = ctx.existing
    target = siblings_of(spec, table, root_id, parent_id)
    if ctx.batch is not None:
        _remember_new_list(ctx, spec, target)
    same_list = old is not None and (getattr(old, spec.root_column), old.parent_id) == (root_id, parent_id)
    lists = [target] if old is None or same_list else [target, siblings_of(spec, table, getattr(old, spec.root_column), old.parent_id)]
    positions.lock_siblings(conn, ctx.tables, spec, lists)
    if same_list and requested is None:
        position = old.position
    elif ctx.batch is not None:
        position = _batch_slot(ctx, target, requested)
    elif requested is None:
        position = positions.append_slot(conn, target)
    else:
        position = positions.slot_at(conn, target, max(0, int(requested)), exclude=ctx.record_id)
    ctx.columns.update({spec.root_column: root_id, "parent_id": parent_id, "position": position})
    if old is None:
        if ctx.batch is not None:
            _remember_new_node(ctx, spec, root_id)
        return
    if getattr(old, spec.root_column) != root_id:
        _move_descendants(ctx, spec, doc, root_id)
    elif old.parent_id != parent_id:
        log_below(conn, ctx.registry, spec, [ctx.record_id], ctx.now)


def _appended_in_batch(ctx, spec, doc: dict) -> bool:
    """Place a new node of a batch that goes at the end of a sibling list the batch has been at
    already, from what the batch remembers alone: its parent's root and the list's last slot (its
    owner then locked). What `place` does for it, without the lookups and objects that find those
    out (most nodes of a bulk load are placed so). False: `place` places it."""
    if doc.get("position") is not None:
        return False
    memo = ctx.batch.memo
    root_id, parent_id = _ref_id(ctx.registry, doc.get(spec.root_field)), _ref_id(ctx.registry, doc.get("parent"))
    if parent_id is not None and root_id is None:
        return False  # its root is taken from its parent
    # A list is remembered under its root and parent once `place` has been at it or read its end,
    # the parent's root checked: a parent of another tree, or the node itself, finds none.
    key = ("slot", ctx.tables[spec.node].name, root_id, parent_id)
    last = memo.get(key)
    position = positions.following(last) if isinstance(last, int) else None
    if position is None:
        return False
    doc.pop("position", None)
    memo[key] = position
    ctx.columns.update({spec.root_column: root_id, "parent_id": parent_id, "position": position})
    _remember_new_node(ctx, spec, root_id)
    return True


def prepare_new_nodes(batch, spec, docs: list[dict]) -> None:
    """What `place` reads for each sibling list a batch's new nodes are appended to (their refs
    validated and checked), read for all of them at once: the root of each parent node the batch
    does not create, and, the lists' owners locked, where each list ends. (A node asking for a
    position reads its list when it is placed.)"""
    table = batch.tables[spec.node]
    parents, roots = set(), set()
    for doc in docs:
        if doc.get("position") is not None:
            continue
        parent = _ref_id(batch.registry, doc.get("parent"))
        if parent is None:
            root = _ref_id(batch.registry, doc.get(spec.root_field))
            if root is not None and (spec.root, root) not in batch.members:
                roots.add(root)
        elif (spec.node, parent) not in batch.members:
            parents.add(parent)
    owners = [Siblings(table, spec.root_column, None, parent) for parent in parents]
    positions.lock_siblings(batch.conn, batch.tables, spec, owners + [Siblings(table, spec.root_column, root, None) for root in roots])
    for parent, root, end in positions.ends_under_nodes(batch.conn, table, spec.root_column, sorted(parents)):
        batch.memo[("root_of", spec.node, parent)] = root
        if root is not None:  # a node in no tree: its children's list is read as each is placed
            _remember_end(batch.memo, table, root, parent, end)
    for root, end in positions.ends_under_roots(batch.conn, table, batch.tables[spec.root], spec.root_column, sorted(roots)):
        _remember_end(batch.memo, table, root, None, end)


def _remember_end(memo: dict, table, root_id: int | None, parent_id: int | None, end: int | None) -> None:
    """The last slot of a sibling list, where `_batch_slot` looks for it (unless the batch has been there first)."""
    memo.setdefault(("slot", table.name, root_id, parent_id), positions.BEFORE_FIRST if end is None else end)


def _root_of(ctx, table, spec, parent_id: int) -> int | None:
    """The root of the parent node; within a batch, read once per parent (or known: a batch member)."""
    memo = ctx.batch.memo if ctx.batch is not None else {}
    key = ("root_of", spec.node, parent_id)
    if key not in memo:
        memo[key] = ctx.conn.execute(select(table.c[spec.root_column]).where(table.c.id == parent_id)).scalar_one()
    return memo[key]


def _remember_new_node(ctx, spec, root_id: int | None) -> None:
    """A node created in this batch: its root is known to its children without a query (its own
    list of children is a new list, `_remember_new_list`)."""
    ctx.batch.memo[("root_of", spec.node, ctx.record_id)] = root_id


def _remember_new_list(ctx, spec, target: Siblings) -> None:
    """A sibling list whose owner (a parent node, or the root for top-level nodes) the batch
    creates: empty (its first node takes the first slot, no query), and seen by no other
    transaction, so its owner needs no lock."""
    owner = (spec.node, target.parent_id) if target.parent_id is not None else (spec.root, target.root_id)
    key = ("slot", target.table.name, target.root_id, target.parent_id)
    if owner in ctx.batch.members and key not in ctx.batch.memo:
        ctx.batch.memo[key] = positions.BEFORE_FIRST
        ctx.conn.info.setdefault("fonds_locked", set()).add(owner)


def _batch_slot(ctx, target: Siblings, requested) -> int:
    """A new node's physical position within a batch of new records: appended nodes take the
    slots after the last one the batch gave in their list (the list's end is read once); before
    the list is read again (a node asking for a position, or the end reached), the batch's
    records derived so far are written."""
    memo, key = ctx.batch.memo, ("slot", target.table.name, target.root_id, target.parent_id)
    last = memo.get(key)
    if requested is None and isinstance(last, int):
        following = positions.following(last)
        if following is not None:
            memo[key] = following
            return following
    if key in memo:
        ctx.batch.flush()
    if requested is None:
        memo[key] = positions.append_slot(ctx.conn, target)
        return memo[key]
    # Placed between others: the next append must read the list's end again.
    memo[key] = STALE
    return positions.slot_at(ctx.conn, target, max(0, int(requested)), exclude=ctx.record_id)


def log_below(conn, registry, spec, node_ids: list[int], now) -> None:
    """One 'updated' change row for every node below `node_ids` (their ancestors changed)."""
    table = conn.info["fonds_tables"][spec.node]
    path = registry[spec.node].path
    for chunk in store.chunks(sorted(set(node_ids))):
        below = hierarchy.descendants_select(table, chunk)
        uri = literal("/repositories/", String) + cast(table.c.repo_id, String) + literal(f"/{path}/", String) + cast(table.c.id, String)
        query = select(literal(spec.node, String), table.c.id, table.c.repo_id, uri, literal("updated", String), literal(now)).where(
            table.c.id.in_(below)
        )
        change_log.append_from(conn, query)


def same_root_message(spec) -> str:
    return f"Parent must belong to the same {spec.root.replace('_', ' ')} as the record"


def _key_within_tree(record_type, spec):
    """The node type's unique key within one tree (an archival object's ref_id, a digital object
    component's component_id), or None."""
    return next((key for key in record_type.unique_keys if len(key.columns) == 2 and key.columns[0] == spec.root_column), None)


def _taken_by_others(conn, table, spec, column: str, root_id: int, values: list[str], moving: dict) -> bool:
    found = conn.execute(select(table.c.id).where(table.c[spec.root_column] == root_id, table.c[column].in_(values))).scalars()
    return any(record_id not in moving for record_id in found)


def _check_keys_free(ctx, spec, table, key, root_id: int | None, moving: dict[int, str | None]) -> None:
    """Refuse the move, before anything is rewritten, if a moving node's key is taken in the target tree."""
    if root_id is None:
        return  # unattached nodes never collide (NULLs, as in the unique index)
    values = [value for value in moving.values() if value is not None]
    # A subtree left split across trees (by the bug this move fixes) may bring equal values together.
    split = len(set(values)) != len(values)
    column = key.columns[1]
    if split or any(_taken_by_others(ctx.conn, table, spec, column, root_id, chunk, moving) for chunk in batches(values)):
        raise Invalid({key.field: [key.message]})


def _move_descendants(ctx, spec, doc: dict, root_id: int | None) -> None:
    """Give every descendant of the node being written its new root: column, JSON, link, change row."""
    conn, table = ctx.conn, ctx.tables[spec.node]
    ids = hierarchy.descendant_ids(conn, table, ctx.record_id)
    if not ids:
        return
    key = _key_within_tree(ctx.record_type, spec)
    if key is not None:
        column = key.columns[1]
        found = {row.id: getattr(row, column) for row in store.fetch_many(conn, table, ids, columns=("id", column))}
        _check_keys_free(ctx, spec, table, key, root_id, {ctx.record_id: doc.get(column), **found})
    root = {"ref": ctx.registry[spec.root].uri(root_id, ctx.repo_id)} if root_id is not None else None

    def set_root(record: dict) -> None:
        if root is None:
            record.pop(spec.root_field, None)
        else:
            record[spec.root_field] = root

    for chunk in batches(ids):
        rewrite_records(
            conn, ctx.record_type, chunk, now=ctx.now, username=ctx.actor, edit=set_root, columns={spec.root_column: root_id}, by_user=True
        )
