"""Deleting a record and what goes with it, as ArchivesSpace does: cascades (a resource takes its
archival objects, a node its descendants, a repository its records), refs to deleted records
removed from the records that held them, or the delete refused when a rule says so."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import select

from fonds.errors import Conflict
from fonds.records.refs import stored_links
from fonds.records.rewrite import rewrite_records
from fonds.storage import change_log
from fonds.storage import links as link_table
from fonds.storage import records as store
from fonds.storage.chunks import is_in, select_any

Key = tuple[str, int]


def _cascade(conn, registry, start: Key) -> tuple[set[Key], list]:
    """Everything deleted with `start`, and every link pointing at any of it (read once, here)."""
    tables = conn.info["fonds_tables"]
    doomed, frontier, links = {start}, [start], []
    while frontier:
        found: list[Key] = []
        for name, record_id in frontier:
            if registry[name].hooks.contains_repository_records:
                for other in registry:
                    if other.repo_scoped:
                        table = tables[other.name]
                        found += [(other.name, i) for i in conn.execute(select(table.c.id).where(table.c.repo_id == record_id)).scalars()]
        found += _tree_nodes_taken(conn, registry, frontier)
        level = link_table.links_to(conn, frontier)
        links += level
        last: set[tuple[str, int, str]] = set()
        for link in level:
            kind = registry[link.source_type].rule_for(link.field).on_target_delete
            if kind == "cascade":
                found.append((link.source_type, link.source_id))
            elif kind == "cascade_last":
                last.add((link.source_type, link.source_id, link.field))
        found += _losing_their_last(conn, tables, last, doomed | set(found))
        frontier = [key for key in dict.fromkeys(found) if key not in doomed]
        doomed.update(frontier)
    return doomed, links


def _tree_nodes_taken(conn, registry, frontier: list[Key]) -> list[Key]:
    """The tree nodes under the roots and nodes of `frontier` that go with them, as their node
    type's rules for its root and parent refs say: read from its columns, which hold those refs
    (`RecordType.tree_fields`), level by level as the links are."""
    tables = conn.info["fonds_tables"]
    by_type: dict[str, list[int]] = defaultdict(list)
    for name, record_id in frontier:
        by_type[name].append(record_id)
    found: list[Key] = []
    for name, ids in by_type.items():
        tree = registry[name].tree
        if tree is None:
            continue
        field, column = ("parent", "parent_id") if name == tree.node else (tree.root_field, tree.root_column)
        if registry[tree.node].rule_for(field).on_target_delete != "cascade":
            continue
        table = tables[tree.node]
        rows = select_any(conn, lambda chunk, table=table, column=column: select(table.c.id).where(is_in(table.c[column], chunk)), ids)
        found += [(tree.node, row.id) for row in rows]
    return found


def _losing_their_last(conn, tables, candidates: set[tuple[str, int, str]], doomed: set[Key]) -> list[Key]:
    """The sources whose every ref at the field goes with `doomed` (`cascade_last`)."""
    table = link_table.readable(conn)
    going = []
    for source_type, source_id, field in sorted(candidates):
        statement = select(table.c.target_type, table.c.target_id).where(
            table.c.source_type == source_type, table.c.source_id == source_id, table.c.field == field
        )
        if all((target_type, target_id) in doomed for target_type, target_id in conn.execute(statement)):
            going.append((source_type, source_id))
    return going


def _remove_paths(doc: dict, paths: list[str]) -> None:
    """Remove the values at slash paths, deepest and highest index first so the others stay valid."""

    def sort_key(path: str):
        return [int(p) if p.isdigit() else -1 for p in path.split("/")]

    for path in sorted(set(paths), key=sort_key, reverse=True):
        *parents, last = path.split("/")
        node = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.get(part)
            if node is None:
                break
        else:
            if isinstance(node, list) and last.isdigit() and int(last) < len(node):
                node.pop(int(last))
            elif isinstance(node, dict):
                node.pop(last, None)


def _unlink_path(rule, path: str) -> str:
    if not rule.unlink_at:
        return path
    depth = len(rule.unlink_at.split("/"))
    return "/".join(path.split("/")[:depth])


def delete_record(conn, registry, record_type, row, *, now, username: str, find_links) -> None:
    tables = conn.info["fonds_tables"]
    doomed, links = _cascade(conn, registry, (record_type.name, row.id))
    unlink: dict[Key, list[str]] = defaultdict(list)
    for link in links:
        source = (link.source_type, link.source_id)
        if source in doomed:
            continue
        rule = registry[link.source_type].rule_for(link.field)
        if rule.on_target_delete == "restrict":
            raise Conflict(rule.message or "Record deletion failed: the record is still referred to")
        unlink[source].append(_unlink_path(rule, link.path))
    for (name, source_id), paths in unlink.items():
        _rewrite_without(conn, registry[name], source_id, paths, now=now, username=username, find_links=find_links)
    by_type: dict[str, list[int]] = defaultdict(list)
    for name, record_id in doomed:
        by_type[name].append(record_id)
    for name, ids in by_type.items():
        doomed_type = registry[name]
        for chunk in store.chunks(sorted(ids)):
            rows = store.fetch_many(conn, tables[name], chunk)
            doomed_type.hooks.on_delete(conn, rows, doomed)
            changes = [
                {
                    "record_type": name,
                    "record_id": r.id,
                    "repo_id": r.repo_id,
                    "uri": doomed_type.uri(r.id, r.repo_id),
                    "op": "deleted",
                    "at": now,
                }
                for r in rows
            ]
            change_log.append(conn, changes)
        store.delete_rows(conn, tables[name], ids)
        link_table.delete_links_of(conn, name, ids)


def _rewrite_without(conn, record_type, record_id: int, paths: list[str], *, now, username: str, find_links) -> None:
    """Drop refs to deleted records from a surviving record; it changes, so its lock_version moves on."""
    [doc] = rewrite_records(conn, record_type, [record_id], now=now, username=username, edit=lambda doc: _remove_paths(doc, paths))
    links = stored_links(record_type, find_links(record_type, doc))
    link_table.replace_links(conn, conn.info["fonds_tables"], source_type=record_type.name, source_id=record_id, links=links)
