"""Small record helpers shared by the tests under tests/records, tests/storage and tests/auth."""

from __future__ import annotations

from sqlalchemy import func, select


def read(api, uri: str, **params) -> dict:
    response = api.get(uri, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def update(api, uri: str, **changes):
    """GET the record, apply `changes` (None removes a key) and POST it back; returns the response."""
    record = read(api, uri)
    for key, value in changes.items():
        if value is None:
            record.pop(key, None)
        else:
            record[key] = value
    return api.post(uri, json=record)


def make_resource(api, repo: int, title: str = "Papers", **extra) -> str:
    return api.create(f"/repositories/{repo}/resources", {"jsonmodel_type": "resource", "title": title, **extra})["uri"]


def ao_body(title: str | None = None, *, resource: str | None = None, parent: str | None = None, **extra) -> dict:
    body = {"jsonmodel_type": "archival_object", **extra}
    if title is not None:
        body["title"] = title
    if resource is not None:
        body["resource"] = {"ref": resource}
    if parent is not None:
        body["parent"] = {"ref": parent}
    return body


def make_ao(api, repo: int, title: str | None = None, **kwargs) -> dict:
    """Create an archival object; returns the create response (`uri`, `stale`, `warnings`…)."""
    return api.create(f"/repositories/{repo}/archival_objects", ao_body(title, **kwargs))


def make_subject(api, term: str, source: str = "local") -> str:
    body = {"jsonmodel_type": "subject", "source": source, "terms": [{"term": term, "term_type": "topical"}]}
    return api.create("/subjects", body)["uri"]


def make_top_container(api, repo: int, indicator: str) -> str:
    return api.create(f"/repositories/{repo}/top_containers", {"jsonmodel_type": "top_container", "indicator": indicator})["uri"]


def instance(top_container: str) -> dict:
    return {"jsonmodel_type": "instance", "instance_type": "mixed_materials", "sub_container": {"top_container": {"ref": top_container}}}


def count_rows(app, table_name: str) -> int:
    db = app.state.fonds.db
    with db.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(db.tables[table_name])).scalar_one()
