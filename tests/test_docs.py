"""docs/security.md states the model administrators rely on: it must match the code."""

from pathlib import Path

from fonds.auth.permissions import PERMISSIONS, STANDARD_GROUPS
from fonds.model import REGISTRY

SECURITY = (Path(__file__).parents[1] / "docs" / "security.md").read_text()


def _codes(codes) -> str:
    return ", ".join(f"`{code}`" for code in sorted(codes))


def test_every_permission_is_documented_with_its_level_and_implications():
    for p in PERMISSIONS:
        implied = ", ".join(f"`{code}`" for code in p.implied_by) or "—"
        assert f"| `{p.code}` | {p.level} | {p.description} | {implied} |" in SECURITY


def test_every_standard_group_is_documented_with_its_grants():
    for code, _, grants in STANDARD_GROUPS:
        assert f"| `{code}` | {_codes(grants)} |" in SECURITY


def test_every_record_types_permissions_are_documented():
    for t in REGISTRY:
        p = t.permissions
        assert f"| {t.name} | `{p.read}` | `{p.create}` | `{p.update}` | `{p.delete}` |" in SECURITY
