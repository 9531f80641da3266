"""Subjects and the vocabularies they belong to."""

from __future__ import annotations

import hashlib

import orjson
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from fonds.records.hooks import Hooks
from fonds.records.registry import Permissions, RecordType, RefRule, RequiredOneOf, Scope, UniqueKey, id_column, text_column
from fonds.records.search_spec import DocumentField, SearchSpec, copied
from fonds.storage import change_log
from fonds.storage import records as store

DEFAULT_VOCABULARY = "/vocabularies/1"


def _sha(*parts) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


class SubjectHooks(Hooks):
    def derive(self, ctx, doc):
        vocabulary = doc.setdefault("vocabulary", DEFAULT_VOCABULARY)
        terms = doc.get("terms", [])
        for term in terms:
            term.setdefault("vocabulary", vocabulary)
            term["uri"] = term_uri(ctx, term)
        if terms:
            doc["title"] = " -- ".join(term["term"] for term in terms)
        doc["display_string"] = doc["title"]
        source = doc.get("source")
        term_key = [(t["term"], t["term_type"]) for t in terms] or doc["title"]
        ctx.columns["terms_key"] = _sha(vocabulary, source, term_key)
        ctx.columns["authority_key"] = _sha(vocabulary, source, doc["authority_id"]) if doc.get("authority_id") else None


def term_uri(ctx, term: dict) -> str:
    """The URI of the term record shared by every subject using this (vocabulary, term, type),
    created the first time a subject uses it (ArchivesSpace's Term.ensure_exists)."""
    table = ctx.tables["term"]
    key = {"vocabulary_id": ctx.registry.parse_uri(term["vocabulary"]).record_id, "term": term["term"], "term_type": term["term_type"]}
    query = select(table.c.id).where(*(table.c[column] == value for column, value in key.items()))
    found = ctx.conn.execute(query).scalar_one_or_none()
    if found is None:
        try:
            # A savepoint: another transaction creating the same term first is no error, only a reuse.
            with ctx.conn.begin_nested():
                found = _create_term(ctx, term, key)
        except IntegrityError:
            found = ctx.conn.execute(query).scalar_one()
    return ctx.registry["term"].uri(found)


def _create_term(ctx, term: dict, key: dict) -> int:
    table, tables = ctx.tables["term"], ctx.tables
    term_id = store.allocate_ids(ctx.conn, table, 1)[0]
    uri, stamp = ctx.registry["term"].uri(term_id), store.iso(ctx.now)
    doc = {
        "jsonmodel_type": "term",
        **{k: term[k] for k in ("term", "term_type", "vocabulary")},
        "uri": uri,
        "lock_version": 0,
        **dict.fromkeys(("created", "modified", "create_time", "system_mtime", "user_mtime"), stamp),
        **dict.fromkeys(("created_by", "last_modified_by"), ctx.actor),
    }
    audit = dict(create_time=ctx.now, system_mtime=ctx.now, user_mtime=ctx.now, created_by=ctx.actor, last_modified_by=ctx.actor)
    row = {"id": term_id, "repo_id": None, "lock_version": 0, "json": orjson.dumps(doc), **audit, **key}
    store.insert_rows(ctx.conn, table, [row])
    store.replace_links(
        ctx.conn,
        tables,
        source_type="term",
        source_id=term_id,
        links=[("vocabulary", "vocabulary", "vocabulary", key["vocabulary_id"])],
        fresh=True,
    )
    change_log.append(
        ctx.conn, [{"record_type": "term", "record_id": term_id, "repo_id": None, "uri": uri, "op": "created", "at": ctx.now}]
    )
    return term_id


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
        name="term",
        path="terms",
        scope=Scope.GLOBAL,
        model_name="Term",
        # Terms are made by the subjects using them and listed by `GET /vocabularies/<id>/terms`:
        # no routes of their own.
        permissions=Permissions(
            read="view_repository", create="update_subject_record", update="update_subject_record", delete="update_subject_record"
        ),
        actions=(),
        columns=(id_column("vocabulary_id"), text_column("term"), text_column("term_type", 64)),
        unique_keys=(UniqueKey(("vocabulary_id", "term", "term_type"), "term", "Term must be unique"),),
        # A vocabulary can only go when no subject uses it; its terms go with it.
        ref_rules=(RefRule("vocabulary", "cascade"),),
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
