"""ArchivesSpace's permissions, what they imply, the standard groups, and the one check every
route goes through.

A user holds a permission in a repository when a group they belong to grants it (or a
permission implying it) in that repository or in the global repository. A global-level
permission is held when any of the user's groups grants it or something implying it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fonds.records.types.repositories import GLOBAL_REPO_ID

GLOBAL_KEY = "_archivesspace"
ADMINISTRATORS = "administrators"
# Always in the global list of the login response (ArchivesSpace's user.rb#permissions).
EDIT_USER_SELF = "edit_user_self"


@dataclass(frozen=True)
class Permission:
    code: str
    level: str  # "repository" or "global"
    description: str
    implied_by: tuple[str, ...] = ()


PERMISSIONS = (
    Permission("administer_system", "global", "The ability to act as a system administrator"),
    Permission("manage_users", "global", "The ability to manage user accounts while logged in"),
    Permission("create_repository", "global", "The ability to create new repositories"),
    Permission("delete_repository", "global", "The ability to delete a repository"),
    Permission("view_all_records", "global", "The ability to view any record in the system"),
    Permission(
        "update_subject_record", "global", "The ability to create and modify subject records", implied_by=("manage_subject_record",)
    ),
    Permission("delete_subject_record", "global", "The ability to delete subject records", implied_by=("manage_subject_record",)),
    Permission(
        "update_location_profile_record",
        "global",
        "The ability to create and modify location profile records",
        implied_by=("manage_location_profile_record",),
    ),
    Permission("update_location_record", "global", "The ability to create and modify location records", implied_by=("manage_repository",)),
    Permission(
        "update_container_profile_record",
        "global",
        "The ability to create/update/delete container profile records",
        implied_by=("manage_container_profile_record",),
    ),
    Permission(
        "update_vocabulary_record",
        "global",
        "The ability to create and modify vocabulary records",
        implied_by=("manage_vocabulary_record",),
    ),
    Permission("update_agent_record", "global", "The ability to create and modify agent records", implied_by=("manage_agent_record",)),
    Permission("delete_agent_record", "global", "The ability to delete agent records", implied_by=("manage_agent_record",)),
    Permission(
        "update_enumeration_record",
        "global",
        "The ability to manage controlled vocabulary lists",
        implied_by=("manage_enumeration_record",),
    ),
    Permission("manage_repository", "repository", "The ability to manage a given repository"),
    Permission("view_repository", "repository", "The ability to view a given repository"),
    Permission("update_accession_record", "repository", "The ability to create and modify accessions records"),
    Permission("update_resource_record", "repository", "The ability to create and modify resources records"),
    Permission("update_container_record", "repository", "The ability to create and update container records"),
    Permission("update_digital_object_record", "repository", "The ability to create and modify digital objects records"),
    Permission("manage_container_record", "repository", "The ability to delete and bulk update container records"),
    Permission("update_event_record", "repository", "The ability to create and modify event records"),
    Permission("delete_event_record", "repository", "The ability to delete event records"),
    Permission("manage_container_profile_record", "repository", "The ability to create, modify and delete a container profile record"),
    Permission("manage_subject_record", "repository", "The ability to create, modify and delete a subject record"),
    Permission("manage_agent_record", "repository", "The ability to create, modify and delete an agent record"),
    Permission("manage_location_profile_record", "repository", "The ability to create, modify and delete a location profile record"),
    Permission("manage_vocabulary_record", "repository", "The ability to create, modify and delete a vocabulary record"),
    Permission("manage_enumeration_record", "repository", "The ability to create, modify and delete a controlled vocabulary list record"),
    Permission("delete_archival_record", "repository", "The ability to delete any archival record"),
    Permission("suppress_archival_record", "repository", "The ability to suppress the major archival record types"),
)
BY_CODE = {p.code: p for p in PERMISSIONS}
PERMISSION_CODES = frozenset(BY_CODE)
REPOSITORY_CODES = frozenset(p.code for p in PERMISSIONS if p.level == "repository")
GLOBAL_CODES = frozenset(p.code for p in PERMISSIONS if p.level == "global")

_BASIC = ("view_repository", "update_accession_record", "update_resource_record", "update_digital_object_record", "update_container_record")
# Everyone above basic data entry records events (ArchivesSpace's repository.rb).
_EVENTS = ("update_event_record",)
_AUTHORITIES = (
    "manage_container_profile_record",
    "manage_subject_record",
    "manage_agent_record",
    "manage_location_profile_record",
    "manage_vocabulary_record",
    "manage_enumeration_record",
)
_CATALOGUING = (*_BASIC, *_EVENTS, "manage_container_record", *_AUTHORITIES)
_DELETING = ("delete_archival_record", "suppress_archival_record", "delete_event_record")

# Created with every repository (ArchivesSpace's repository.rb), reduced to the permissions Fonds has.
STANDARD_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("repository-managers", "Managers of the {code} repository", tuple(sorted(REPOSITORY_CODES))),
    ("repository-archivists", "Archivists of the {code} repository", _CATALOGUING),
    ("repository-project-managers", "Project managers of the {code} repository", (*_CATALOGUING, *_DELETING)),
    ("repository-advanced-data-entry", "Advanced data entry staff of the {code} repository", (*_BASIC, *_EVENTS, *_AUTHORITIES)),
    ("repository-basic-data-entry", "Basic data entry staff of the {code} repository", _BASIC),
    ("repository-viewers", "Viewers of the {code} repository", ("view_repository",)),
)


# Each permission with every permission implying it (checked on every request, so computed once).
_IMPLYING = {p.code: frozenset((p.code, *p.implied_by)) for p in PERMISSIONS}


def implying(code: str) -> frozenset[str]:
    """The permission itself and every permission that implies it."""
    return _IMPLYING.get(code, frozenset((code,)))


Grants = frozenset[tuple[int, str]]  # (repository id of the granting group, permission code)


def has_permission(grants: Grants, permission: str, repo_id: int | None) -> bool:
    """Whether `grants` give `permission` in repository `repo_id` (None: anywhere, for global types)."""
    wanted = implying(permission)
    anywhere = repo_id is None or permission in GLOBAL_CODES
    for granted_in, code in grants:
        if code in wanted and (anywhere or granted_in in (repo_id, GLOBAL_REPO_ID)):
            return True
    return False


def effective(grants: Grants, repo_id: int) -> list[str]:
    """Every repository-level code held in `repo_id`, sorted."""
    return sorted(code for code in REPOSITORY_CODES if has_permission(grants, code, repo_id))


def global_codes(grants: Grants) -> list[str]:
    return sorted({code for code in GLOBAL_CODES if has_permission(grants, code, None)} | {EDIT_USER_SELF})


def permissions_by_repository(grants: Grants, repo_ids: Iterable[int]) -> dict[str, list[str]]:
    """The `permissions` object of the login response: repository URI -> codes, plus global ones."""
    by_repo = {f"/repositories/{repo_id}": effective(grants, repo_id) for repo_id in repo_ids}
    return {**by_repo, GLOBAL_KEY: global_codes(grants)}


def permission_listing(level: str) -> list[dict]:
    """`GET /permissions?level=`: ArchivesSpace's permission records."""
    return [
        {
            "permission_code": p.code,
            "description": p.description,
            "level": p.level,
            "uri": f"/permissions/{n}",
            "jsonmodel_type": "permission",
        }
        for n, p in enumerate(PERMISSIONS, start=1)
        if level == "all" or p.level == level
    ]
