"""Declarations are checked when the registry is built: a mistake fails at start, not later."""

import dataclasses
import re

import pytest

from fonds.auth.permissions import PERMISSION_CODES
from fonds.model import REGISTRY
from fonds.records.registry import Permissions, RegistryError, build_registry
from fonds.records.types import RECORD_TYPES


def test_an_unknown_permission_code_fails_the_build_naming_type_code_and_action():
    subject = REGISTRY["subject"]
    typo = dataclasses.replace(subject, permissions=dataclasses.replace(subject.permissions, delete="delete_subjcet_record"))
    with pytest.raises(RegistryError, match="record type 'subject' needs unknown permission 'delete_subjcet_record' to delete"):
        build_registry([REGISTRY["repository"], typo], permission_codes=PERMISSION_CODES)


def test_every_unknown_code_is_reported_at_once():
    odd = Permissions(read="peek", create="poke", update="update_resource_record", delete="delete_archival_record")
    with pytest.raises(RegistryError) as refused:
        build_registry([dataclasses.replace(REGISTRY["resource"], permissions=odd)], permission_codes=PERMISSION_CODES)
    assert "'peek' to read" in str(refused.value) and "'poke' to create" in str(refused.value)


def test_two_types_with_one_name_or_path_fail_the_build():
    accession = REGISTRY["accession"]
    with pytest.raises(RegistryError, match="two record types have the name 'accession'"):
        build_registry([accession, dataclasses.replace(accession, path="other")], permission_codes=PERMISSION_CODES)
    with pytest.raises(RegistryError, match="two record types have the path 'accessions'"):
        build_registry([accession, dataclasses.replace(accession, name="other")], permission_codes=PERMISSION_CODES)


def test_a_type_deriving_new_records_alone_may_not_have_batch_or_after_save_hooks():
    accession = REGISTRY["accession"]

    class Hooks(type(accession.hooks)):
        def after_save(self, service, ctx, doc, actor):
            pass

    with pytest.raises(
        RegistryError, match=re.escape("record type 'accession' derives new records alone (derive_new) but has its own after_save")
    ):
        build_registry([dataclasses.replace(accession, hooks=Hooks())], permission_codes=PERMISSION_CODES)


def test_the_complete_registry_is_the_record_layers_types_plus_users_and_groups():
    assert [t.name for t in REGISTRY] == [t.name for t in RECORD_TYPES] + ["user", "group"]
