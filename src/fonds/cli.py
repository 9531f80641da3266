"""The `fonds` command: serve, db upgrade."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fonds.config import SettingsError, load_settings

cli = typer.Typer(help="Fonds: archival records backend (ArchivesSpace-compatible API).", no_args_is_help=True)
db_cli = typer.Typer(help="Database maintenance.", no_args_is_help=True)
cli.add_typer(db_cli, name="db")
console = Console(stderr=True)

ConfigOption = Annotated[Path | None, typer.Option("--config", help="TOML file of settings (FONDS_* variables override it).")]


def _settings(config: Path | None):
    try:
        return load_settings(config_file=config)
    except SettingsError as exc:
        console.print(f"[red]Configuration error:[/red] {exc}")
        raise typer.Exit(2) from None


@cli.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8089,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    config: ConfigOption = None,
):
    """Start the API (migrating the database and creating the admin user on first start)."""
    import uvicorn

    from fonds.app import open_services

    settings = _settings(config)
    if config is not None:
        os.environ["FONDS_CONFIG"] = str(config.resolve())
    # Migrate and bootstrap once here, so that workers start on a ready database.
    open_services(settings).db.dispose()
    console.print(f"Fonds listening on http://{host}:{port} (database: {settings.effective_database_url.split('://')[0]})")
    uvicorn.run("fonds.app:app_from_environment", factory=True, host=host, port=port, workers=workers, log_level="info")


@db_cli.command("upgrade")
def db_upgrade(config: ConfigOption = None):
    """Apply pending database migrations."""
    from fonds.records.registry import database_metadata
    from fonds.storage import migrate
    from fonds.storage.db import Database

    settings = _settings(config)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.effective_database_url, database_metadata())
    migrate.upgrade(db)
    console.print(f"Database at revision {migrate.current_revision(db)}")
    db.dispose()


def main() -> None:
    cli()
