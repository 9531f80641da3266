"""Full-text search: the index, its documents, the indexer and the queries."""
