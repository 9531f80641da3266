"""The complete record model: the record layer's types plus auth's users and groups, checked
and built once. Everything that needs every type (the app, migrations, the CLI, tests) takes
`REGISTRY` from here; the layers below receive it as an argument."""

from __future__ import annotations

from fonds.auth import types as auth_types
from fonds.auth.permissions import PERMISSION_CODES
from fonds.records.registry import build_registry
from fonds.records.types import RECORD_TYPES

REGISTRY = build_registry((*RECORD_TYPES, *auth_types.TYPES), permission_codes=PERMISSION_CODES)


def database_metadata():
    """The tables of every registered type plus the shared ones (change log, links, sessions)."""
    return REGISTRY.metadata()
