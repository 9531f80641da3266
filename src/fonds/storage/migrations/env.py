"""Alembic environment: always run on a connection handed over by `fonds.storage.migrate`."""

from alembic import context

from fonds.model import database_metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=database_metadata(),
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
