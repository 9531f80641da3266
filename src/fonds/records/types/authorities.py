"""Subjects and the vocabularies they belong to."""

from __future__ import annotations

import hashlib

import orjson

from fonds.records.hooks import Hooks
from fonds.records.registry import Permissions, RecordType, RefRule, RequiredOneOf, Scope, UniqueKey, text_column
from fonds.records.search_spec import DocumentField, SearchSpec, copied

DEFAULT_VOCABULARY = "/vocabularies/1"


def _sha(*parts) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


class SubjectHooks(Hooks):
    def derive(self, ctx, doc):
        vocabulary = doc.setdefault("vocabulary", DEFAULT_VOCABULARY)
        terms = doc.get("terms", [])
        for term in terms:
            term.setdefault("vocabulary", vocabulary)
        if terms:
            doc["title"] = " -- ".join(term["term"] for term in terms)
        doc["display_string"] = doc["title"]
        source = doc.get("source")
        term_key = [(t["term"], t["term_type"]) for t in terms] or doc["title"]
        ctx.columns["terms_key"] = _sha(vocabulary, source, term_key)
        ctx.columns["authority_key"] = _sha(vocabulary, source, doc["authority_id"]) if doc.get("authority_id") else None


class VocabularyHooks(Hooks):
    def can_delete(self, row) -> bool:
        return row.ref_id != "global"

    def derive(self, ctx, doc):
        doc.setdefault("name", doc.get("title"))
        ctx.columns["ref_id"] = doc["ref_id"]


# What each type's search documents hold (fonds.records.search_spec).
SUBJECT_SEARCH = SearchSpec(
    fields=(
        copied("source", "keyword"),
        DocumentField("first_term_type", "keyword", lambda doc, _: (doc.get("terms") or [{}])[0].get("term_type")),
        copied("authority_id", "keyword"),
        copied("vocabulary", "keyword"),
    ),
    shown_in_linkers=True,
)


TYPES = (
    RecordType(
        name="subject",
        path="subjects",
        scope=Scope.GLOBAL,
        model_name="Subject",
        permissions=Permissions(
            read="view_repository", create="update_subject_record", update="update_subject_record", delete="delete_subject_record"
        ),
        minimum=(RequiredOneOf(("title", "terms")),),
        columns=(text_column("terms_key", 64), text_column("authority_key", 64)),
        unique_keys=(
            UniqueKey(("terms_key",), "terms", "Subject must be unique", report_conflict=True),
            UniqueKey(("authority_key",), "authority_id", "Subject heading identifier must be unique within source", report_conflict=True),
        ),
        ref_rules=(RefRule("vocabulary", "restrict", message="Vocabulary is in use by subjects"),),
        hooks=SubjectHooks(),
        search=SUBJECT_SEARCH,
    ),
    RecordType(
        name="vocabulary",
        path="vocabularies",
        scope=Scope.GLOBAL,
        model_name="Vocabulary",
        permissions=Permissions(
            read="view_repository",
            create="update_vocabulary_record",
            update="update_vocabulary_record",
            delete="update_vocabulary_record",
        ),
        minimum=(RequiredOneOf(("name", "title")), RequiredOneOf(("ref_id",))),
        columns=(text_column("ref_id"),),
        unique_keys=(UniqueKey(("ref_id",), "ref_id", "Vocabulary ref_id must be unique"),),
        hooks=VocabularyHooks(),
        list_is_plain_array=True,
    ),
)
