"""Every route declares the permission it needs, or is on the explicit public list of decisions.md."""

from fastapi.routing import APIRoute

from fonds.api.deps import PUBLIC

# decisions.md: only these are public.
PUBLIC_ROUTES = {
    ("GET", "/"),
    ("GET", "/version"),
    ("POST", "/users/{username}/login"),
    ("POST", "/logout"),
    ("GET", "/schemas"),
    ("GET", "/schemas/{name}"),
    ("GET", "/config/enumerations"),
    ("GET", "/config/enumerations/csv"),
    ("GET", "/config/enumerations/{enum_id}"),
    ("GET", "/config/enumerations/names/{enum_name}"),
    ("GET", "/config/enumeration_values/{enum_val_id}"),
    ("GET", "/docs"),
    ("GET", "/permissions"),
}
FRAMEWORK_ROUTES = {"/openapi.json"}


def _routes(app):
    for route in app.routes:
        if isinstance(route, APIRoute):
            for method in route.methods:
                yield method, route.path, route
        else:
            assert route.path in FRAMEWORK_ROUTES, f"unexpected non-API route {route.path}"


def test_every_route_declares_a_permission_or_is_listed_public(app):
    public = set()
    for method, path, route in _routes(app):
        permission = getattr(route, "fonds_permission", None)
        assert permission, f"{method} {path} declares no permission"
        if permission == PUBLIC:
            public.add((method, path))
    assert public == PUBLIC_ROUTES


def test_every_protected_route_refuses_an_anonymous_client(app, client, repo):
    for method, path, route in _routes(app):
        if route.fonds_permission == PUBLIC:
            continue
        url = path.format(repo_id=repo, id=1, username="admin", name="accession", enum_id=1, enum_val_id=1)
        response = client.request(method, url, content=b"{}")
        assert response.status_code == 403, f"{method} {url} -> {response.status_code}"
        assert response.json() == {"error": "Access denied"}
