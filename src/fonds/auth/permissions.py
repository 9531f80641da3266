"""ArchivesSpace's permission names and the check every route goes through."""

from __future__ import annotations

from dataclasses import dataclass

GLOBAL_KEY = "_archivesspace"


@dataclass(frozen=True)
class Permission:
    code: str
    level: str  # "repository" or "global"
    description: str


PERMISSIONS = (
    Permission("administer_system", "global", "The ability to act as a system administrator"),
    Permission("manage_users", "global", "The ability to manage user accounts while logged in"),
    Permission("create_repository", "global", "The ability to create new repositories"),
    Permission("delete_repository", "global", "The ability to delete a repository"),
    Permission("view_all_records", "global", "The ability to view any record in the system"),
    Permission("update_subject_record", "global", "The ability to create and modify subject records"),
    Permission("delete_subject_record", "global", "The ability to delete subject records"),
    Permission("update_location_profile_record", "global", "The ability to create and modify location profile records"),
    Permission("update_vocabulary_record", "global", "The ability to create and modify vocabulary records"),
    Permission("manage_repository", "repository", "The ability to manage a given repository"),
    Permission("view_repository", "repository", "The ability to view a given repository"),
    Permission("update_accession_record", "repository", "The ability to create and modify accessions records"),
    Permission("update_resource_record", "repository", "The ability to create and modify resources records"),
    Permission("update_container_record", "repository", "The ability to create and update container records"),
    Permission("manage_container_record", "repository", "The ability to delete and bulk update container records"),
    Permission("manage_subject_record", "repository", "The ability to create, modify and delete a subject record"),
    Permission("manage_location_profile_record", "repository", "The ability to create, modify and delete a location profile record"),
    Permission("delete_archival_record", "repository", "The ability to delete any archival record"),
    Permission("suppress_archival_record", "repository", "The ability to suppress the major archival record types"),
)
PERMISSION_CODES = frozenset(p.code for p in PERMISSIONS)


def has_permission(user, permission: str, repo_id: int | None) -> bool:
    """Administrators hold every permission everywhere. (Groups arrive with the auth issue.)"""
    return bool(user is not None and user.is_admin)


def permissions_by_repository(user, repository_uris: list[str]) -> dict[str, list[str]]:
    """The `permissions` object of the login response: repository URI -> codes, plus global ones."""
    if not user.is_admin:
        return {GLOBAL_KEY: []}
    repo_codes = sorted(p.code for p in PERMISSIONS if p.level == "repository")
    everything = sorted(PERMISSION_CODES)
    return {**{uri: repo_codes for uri in repository_uris}, GLOBAL_KEY: everything}
