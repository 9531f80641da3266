"""`POST …/<root or node>/<id>/children`: create a batch of new nodes under one target, all or none.

Every child is parsed and validated before the transaction opens; then they are written as one
batch (records/writes.py: ids, refs, positions, rows, links and change rows in bulk) in one
transaction, so a failure anywhere leaves nothing behind."""

from __future__ import annotations

from fonds.errors import Invalid, NotFound, nested_under
from fonds.records.imports import BULK_IMPORTS
from fonds.records.trees.moves import updated
from fonds.records.writes import Batch, NewRecord
from fonds.storage import records as store
from fonds.storage import statistics

# Children per request; the body size limit applies too.
MAX_CHILDREN = 20_000


def _prefixed(error: Invalid, index: int) -> Invalid:
    return nested_under(error, f"children/{index}")


def parse_children(service, target_type, target_id: int, repo_id: int, body: bytes, root_uri: str) -> list[tuple[dict, dict]]:
    """Each child made into a node of the target (its root and parent refs set), validated."""
    from fonds.records.service import parse_body

    spec = target_type.tree
    doc = parse_body(body)
    given = doc.get("jsonmodel_type")
    if given not in (None, "", spec.children_type):
        raise Invalid({"jsonmodel_type": [f"Must be '{spec.children_type}' for this endpoint (you provided '{given}')"]})
    children = doc.get("children")
    if not isinstance(children, list) or not children:
        raise Invalid({"children": ["Must be a non-empty array of records"]})
    if len(children) > MAX_CHILDREN:
        raise Invalid({"children": [f"At most {MAX_CHILDREN} children per request (you gave {len(children)})"]})
    node_type = service.registry[spec.node]
    target_uri = target_type.uri(target_id, repo_id)
    service.value_lists.refresh()
    prepared = []
    for index, child in enumerate(children):
        if not isinstance(child, dict):
            raise Invalid({f"children/{index}": ["Must be a JSON object"]})
        child = {**child}
        child[spec.root_field] = {"ref": root_uri}
        if target_type.name == spec.root:
            child.pop("parent", None)
        else:
            child["parent"] = {"ref": target_uri}
        child.setdefault("jsonmodel_type", spec.node)
        try:
            clean, warnings, _ = service.prepare_doc(node_type, child, creating=True, refresh=False)
        except Invalid as error:
            raise _prefixed(error, index) from None
        prepared.append((clean, warnings))
    return prepared


def _root_uri(service, target_type, target_id: int, repo_id: int) -> str:
    spec = target_type.tree
    with service.db.read() as conn:
        service.check_repository(conn, target_type, repo_id)
        target = store.fetch(conn, conn.info["fonds_tables"][target_type.name], target_id, repo_id=repo_id)
    if target is None:
        raise NotFound(target_type.not_found())
    root_id = target_id if target_type.name == spec.root else getattr(target, spec.root_column)
    return service.registry[spec.root].uri(root_id, repo_id)


def add_children(service, target_type, target_id: int, repo_id: int, body: bytes, actor) -> dict:
    root_uri = _root_uri(service, target_type, target_id, repo_id)
    prepared = parse_children(service, target_type, target_id, repo_id, body, root_uri)
    with service.db.write() as conn:
        target = store.fetch(conn, conn.info["fonds_tables"][target_type.name], target_id, repo_id=repo_id, for_update=True)
        if target is None:
            raise NotFound(target_type.not_found())
        create_many(service, conn, service.registry[target_type.tree.node], prepared, repo_id=repo_id, actor=actor)
    statistics.after_bulk_load(
        service.db, [target_type.tree.node], len(prepared), background=True, until_quiet=BULK_IMPORTS.analysis_may_start
    )
    return updated(target_id, target.lock_version)


def create_many(service, conn, node_type, prepared: list[tuple[dict, dict]], *, repo_id: int, actor) -> None:
    items = [NewRecord(node_type, doc, warnings, repo_id, label=f"children/{index}") for index, (doc, warnings) in enumerate(prepared)]
    Batch(service, conn, actor).create(items)
