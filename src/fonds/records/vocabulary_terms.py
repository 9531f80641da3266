"""`GET /vocabularies/<id>/terms`: the term records of a vocabulary (ArchivesSpace's
controllers/vocabulary.rb), each made when a subject first used it (see `term_uri` in
records/types/authorities.py) and served as stored."""

from __future__ import annotations

from sqlalchemy import select

from fonds.errors import NotFound
from fonds.records.registry import Registry
from fonds.storage.db import Database


def vocabulary_terms(db: Database, registry: Registry, vocabulary_id: int) -> bytes:
    """A JSON array of the vocabulary's terms, oldest first."""
    with db.read() as conn:
        tables = conn.info["fonds_tables"]
        vocabularies = tables["vocabulary"]
        if conn.execute(select(vocabularies.c.id).where(vocabularies.c.id == vocabulary_id)).scalar_one_or_none() is None:
            raise NotFound(registry["vocabulary"].not_found())
        terms = tables["term"]
        bodies = conn.execute(select(terms.c.json).where(terms.c.vocabulary_id == vocabulary_id).order_by(terms.c.id)).scalars().all()
    return b"[" + b",".join(bodies) + b"]"
