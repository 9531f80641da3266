"""The OpenAPI document describes the API truthfully: checked by hand for what a generated
client relies on, and by schemathesis generating requests for every operation in-process
(server errors, undocumented statuses, wrong content types and bodies off their schema all fail)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

from tests.factories import Api, new_client

# Per operation; with about 65 operations this keeps the run well under a minute per database.
EXAMPLES = 3
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def spec(client) -> dict:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def operations(spec: dict):
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_no_operation_documents_422_and_every_one_documents_its_errors(spec):
    for path, method, operation in operations(spec):
        statuses = set(operation["responses"])
        assert "422" not in statuses, (method, path)
        assert {"200", "400", "412"} <= statuses, (method, path)
        for status in statuses - {"200"}:
            content = operation["responses"][status]["content"]["application/json"]
            assert content["schema"] == {"$ref": "#/components/schemas/error"}, (method, path, status)
    assert "HTTPValidationError" not in spec["components"]["schemas"]


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("post", "/users/{username}/login", {"403", "429"}),
        ("get", "/repositories/{repo_id}/accessions/{id}", {"403", "404"}),
        ("post", "/repositories/{repo_id}/accessions/{id}", {"403", "404", "409", "413"}),
        ("delete", "/subjects/{id}", {"403", "404", "409"}),
    ],
)
def test_operations_document_the_statuses_they_answer_with(spec, method, path, expected):
    assert expected <= set(spec["paths"][path][method]["responses"])


def test_listings_document_their_three_shapes(spec, api, repo):
    schema = spec["paths"]["/repositories/{repo_id}/accessions"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    page, ids, records = schema["oneOf"]
    assert page["type"] == "object" and set(page["required"]) == {"first_page", "last_page", "this_page", "total", "results"}
    assert ids == {**ids, "type": "array", "items": {"type": "integer"}}
    assert records["items"] == {"$ref": "#/components/schemas/accession"}
    created = api.create(f"/repositories/{repo}/accessions", {"jsonmodel_type": "accession", "title": "A"})
    assert api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json() == [created["id"]]
    names = {p["name"] for p in spec["paths"]["/repositories/{repo_id}/accessions"]["get"]["parameters"]}
    assert {"page", "page_size", "id_set", "id_set[]", "all_ids", "resolve[]"} <= names


def test_required_fields_are_required(spec):
    components = spec["components"]["schemas"]
    for name in ("accession", "resource", "archival_object", "subject", "repository", "user", "group"):
        assert "jsonmodel_type" in components[name]["required"], name
    assert components["write_result"]["required"] == ["status", "id", "lock_version", "uri", "warnings"]
    assert components["error"]["required"] == ["error"]


# -- schemathesis over the in-process app ---------------------------------------------------


class Admin:
    """The admin's session header, logged in again when a generated request ended the session
    (a logout, a password change): later operations are still exercised, not just refused."""

    def __init__(self, app):
        self.app = app
        self.headers = self._login()
        self.statuses: list[int] = []

    def _login(self) -> dict:
        return {"X-ArchivesSpace-Session": Api.login(new_client(self.app)).token}

    def refresh_after(self, response) -> None:
        self.statuses.append(response.status_code)
        if response.status_code == 412:
            self.headers = self._login()


def check_operation(operation, admin: Admin) -> None:
    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
    def run(case):
        response = case.call_and_validate(headers=admin.headers, checks=CHECKS)
        admin.refresh_after(response)

    run()


def test_generated_requests_get_documented_answers(app, repo):
    """Every operation, over one app (a repository to write into, the admin logged in); the
    failures of all operations are reported together."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    admin = Admin(app)
    failures = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        try:
            check_operation(operation, admin)
        except Exception as failure:
            failures[operation.label] = failure
    assert not failures, "\n\n".join(f"{label}:\n{failure}" for label, failure in failures.items())
    # Requests got through to real answers, whose bodies were checked against their schemas.
    assert admin.statuses.count(200) >= 5, admin.statuses
