"""Storage: SQLAlchemy Core tables, transactions and migrations. Knows nothing of HTTP or record semantics."""
