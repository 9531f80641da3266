"""Full-text search: analysis, the Lucene query language, sorting (and, beside them, the index)."""
