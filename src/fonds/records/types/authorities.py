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
from fonds.storage import links as link_table
from fonds.storage import records as store
from fonds.storage.chunks import is_in, select_any

DEFAULT_VOCABULARY = "/vocabularies/1"


def _sha(*parts) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


class SubjectHooks(Hooks):
    def prepare_batch(self, batch, docs):
        """The terms of a batch's subjects found, and the missing ones created, in a few statements
        (not a lookup and a savepoint per term): `term_uri` then reads them from the batch's memo."""
        wanted: dict[tuple, dict] = {}
        for doc in docs:
            vocabulary = doc.get("vocabulary", DEFAULT_VOCABULARY)
            for term in doc.get("terms", []):
                given = {**term, "vocabulary": term.get("vocabulary", vocabulary)}
                wanted.setdefault(_term_key(batch.registry, given), given)
        known = batch.memo.setdefault("term", {})
        wanted = {key: term for key, term in wanted.items() if key not in known}
        known.update(_stored_terms(batch.conn, batch.tables["term"], list(wanted)))
        missing = [(key, term) for key, term in wanted.items() if key not in known]
        if not missing:
            return
        try:
            # A savepoint: another transaction creating one of these terms first is no error; the
            # terms are then found or made one at a time (`term_uri`).
            with batch.conn.begin_nested():
                ids = store.allocate_ids(batch.conn, batch.tables["term"], len(missing))
                _store_terms(
                    batch.conn,
                    batch.registry,
                    [(term_id, key, term) for term_id, (key, term) in zip(ids, missing)],
                    batch.actor.username,
                    batch.now,
                )
        except IntegrityError:
            return
        known.update((key, term_id) for term_id, (key, _) in zip(ids, missing))

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


def _term_key(registry, term: dict) -> tuple:
    """(vocabulary id, term, term type): what makes a term record (its unique key)."""
    return (registry.parse_uri(term["vocabulary"]).record_id, term["term"], term["term_type"])


KEY_COLUMNS = ("vocabulary_id", "term", "term_type")


def _stored_terms(conn, table, keys: list[tuple]) -> dict[tuple, int]:
    """{key: id} of the stored terms among `keys`."""
    by_vocabulary: dict[int, set[str]] = {}
    for vocabulary_id, text, _ in keys:
        by_vocabulary.setdefault(vocabulary_id, set()).add(text)
    wanted, found = set(keys), {}
    for vocabulary_id, texts in by_vocabulary.items():
        rows = select_any(
            conn,
            lambda chunk, v=vocabulary_id: select(table.c.id, *(table.c[c] for c in KEY_COLUMNS)).where(
                table.c.vocabulary_id == v, is_in(table.c.term, chunk)
            ),
            sorted(texts),
        )
        found.update((tuple(row[1:]), row.id) for row in rows if tuple(row[1:]) in wanted)
    return found


def term_uri(ctx, term: dict) -> str:
    """The URI of the term record shared by every subject using this (vocabulary, term, type),
    created the first time a subject uses it (ArchivesSpace's Term.ensure_exists)."""
    key = _term_key(ctx.registry, term)
    prepared = ctx.batch.memo.get("term", {}) if ctx.batch is not None else {}
    if key in prepared:
        return ctx.registry["term"].uri(prepared[key])
    table = ctx.tables["term"]
    query = select(table.c.id).where(*(table.c[column] == value for column, value in zip(KEY_COLUMNS, key)))
    found = ctx.conn.execute(query).scalar_one_or_none()
    if found is None:
        try:
            # A savepoint: another transaction creating the same term first is no error, only a reuse.
            with ctx.conn.begin_nested():
                found = store.allocate_ids(ctx.conn, table, 1)[0]
                _store_terms(ctx.conn, ctx.registry, [(found, key, term)], ctx.actor, ctx.now)
        except IntegrityError:
            found = ctx.conn.execute(query).scalar_one()
    return ctx.registry["term"].uri(found)


def _store_terms(conn, registry, terms: list[tuple[int, tuple, dict]], actor: str, now) -> None:
    """Write new term records ((id, key, term) each): rows, links to their vocabulary, change rows."""
    stamp = store.iso(now)
    audit = dict(create_time=now, system_mtime=now, user_mtime=now, created_by=actor, last_modified_by=actor)
    rows, links, changes = [], [], []
    for term_id, key, term in terms:
        uri = registry["term"].uri(term_id)
        doc = {
            "jsonmodel_type": "term",
            **{k: term[k] for k in ("term", "term_type", "vocabulary")},
            "uri": uri,
            "lock_version": 0,
            **dict.fromkeys(("created", "modified", "create_time", "system_mtime", "user_mtime"), stamp),
            **dict.fromkeys(("created_by", "last_modified_by"), actor),
        }
        rows.append({"id": term_id, "repo_id": None, "lock_version": 0, "json": orjson.dumps(doc), **audit, **dict(zip(KEY_COLUMNS, key))})
        links.append(("term", term_id, ("vocabulary", "vocabulary", "vocabulary", key[0])))
        changes.append({"record_type": "term", "record_id": term_id, "repo_id": None, "uri": uri, "op": "created", "at": now})
    tables = conn.info["fonds_tables"]
    store.insert_rows(conn, tables["term"], rows)
    link_table.insert_links(conn, tables, links)
    change_log.append(conn, changes)


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
