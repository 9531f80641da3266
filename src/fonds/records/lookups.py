"""`find_by_id`: records of one type found by the values of their declared lookups
(`RecordType.lookups`), answered as ArchivesSpace answers: `{"<path>": [{"ref": uri}, …]}`,
ordered by id, with `_resolved` where `resolve[]` asks for it."""

from __future__ import annotations

import orjson
from sqlalchemy import select

from fonds.records import refs
from fonds.records.registry import RecordType
from fonds.storage.chunks import is_in, select_any


def find_by_id(service, record_type: RecordType, *, repo_id: int, sent: dict[str, list[str]], resolve: list[str]) -> bytes:
    """`sent`: the values of each lookup parameter given (`{"ref_id": ["a", "b"]}`)."""
    criteria = [(lookup.column, lookup.values(sent[lookup.param])) for lookup in record_type.lookups if sent.get(lookup.param)]
    with service.db.read() as conn:
        service.check_repository(conn, record_type, repo_id, writing=False)
        ids = _matching_ids(conn, record_type, repo_id, criteria) if criteria else []
        doc = {record_type.path: [{"ref": record_type.uri(record_id, repo_id)} for record_id in ids]}
        wanted = refs.parse_resolve(resolve)
        if wanted and ids:
            refs.attach_resolved(conn, service.registry, service.render, [doc], wanted)
    return orjson.dumps(doc)


def _matching_ids(conn, record_type: RecordType, repo_id: int, criteria: list[tuple[str, list]]) -> list[int]:
    """Select by the first criterion's values in chunks and filter by the others' (every criterion
    must match, as one query's AND would)."""
    table = conn.info["fonds_tables"][record_type.name]
    (column, values), others = criteria[0], criteria[1:]
    if not values or not all(wanted for _, wanted in others):
        return []
    columns = [table.c.id, *(table.c[name] for name, _ in others)]
    rows = select_any(conn, lambda chunk: select(*columns).where(table.c.repo_id == repo_id, is_in(table.c[column], chunk)), values)
    wanted = [(name, set(allowed)) for name, allowed in others]
    return sorted({row.id for row in rows if all(getattr(row, name) in allowed for name, allowed in wanted)})
