"""The `fonds` command: serve, db upgrade, sessions purge, user set-password, enumerations."""

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
sessions_cli = typer.Typer(help="Login sessions.", no_args_is_help=True)
cli.add_typer(sessions_cli, name="sessions")
user_cli = typer.Typer(help="User accounts.", no_args_is_help=True)
cli.add_typer(user_cli, name="user")
enumerations_cli = typer.Typer(help="Controlled value lists (ArchivesSpace's enumerations).", no_args_is_help=True)
cli.add_typer(enumerations_cli, name="enumerations")
console = Console(stderr=True)
out = Console()

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
    import subprocess
    import sys

    from fonds import server

    settings = _settings(config)
    if config is not None:
        os.environ["FONDS_CONFIG"] = str(config.resolve())
    # Migrate and bootstrap once here, so that workers start on a ready database, and in a child
    # process: the server then never holds what a first start loads and builds (Alembic, the
    # seeded records and lists; a third of its memory at start). A plain child: multiprocessing's
    # would leave its resource tracker running beside the server for good (15 MB of RSS).
    prepare = [sys.executable, "-m", "fonds", "db", "prepare", *(["--config", str(config)] if config is not None else [])]
    if subprocess.run(prepare, check=False).returncode != 0:
        console.print("[red]The database could not be prepared[/red] (the error is above)")
        raise typer.Exit(1)
    console.print(f"Fonds listening on http://{host}:{port} (database: {settings.effective_database_url.split('://')[0]})")
    if os.name != "posix":  # no exec that keeps the process: serve from this one
        server.run(host, port, workers)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    arguments = server.command(host, port, workers)
    os.execv(arguments[0], arguments)


@db_cli.command("prepare")
def db_prepare(config: ConfigOption = None):
    """Apply pending migrations and create what a first start creates (the admin user, the value lists).

    `fonds serve` does this itself, in a child process, before it starts listening."""
    from fonds.app import open_services

    open_services(_settings(config)).db.dispose()


@db_cli.command("upgrade")
def db_upgrade(config: ConfigOption = None):
    """Apply pending database migrations."""
    from fonds.model import database_metadata
    from fonds.storage import migrate
    from fonds.storage.db import Database

    settings = _settings(config)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.effective_database_url, database_metadata())
    migrate.upgrade(db)
    console.print(f"Database at revision {migrate.current_revision(db)}")
    db.dispose()


def _services(config: Path | None):
    from fonds.app import open_services

    return open_services(_settings(config))


@sessions_cli.command("purge")
def sessions_purge(config: ConfigOption = None):
    """Delete idle sessions and old failed-login counters (also done at every login); for cron."""
    from fonds.auth import throttle
    from fonds.auth.sessions import purge_expired

    services = _services(config)
    with services.db.write() as conn:
        sessions, counters = purge_expired(conn, services.settings), throttle.purge(conn)
    services.db.dispose()
    console.print(f"Purged {sessions} expired session(s) and {counters} failed-login counter(s)")


@user_cli.command("set-password")
def user_set_password(
    username: Annotated[str, typer.Argument(help="The user whose password to set (e.g. admin).")],
    config: ConfigOption = None,
):
    """Set a user's password (asked for twice, never echoed), end their sessions and lift any login lockout."""
    from fonds.auth.users import reset_password
    from fonds.errors import FondsError

    services = _services(config)
    password = typer.prompt("New password", hide_input=True, confirmation_prompt=True)
    try:
        reset_password(services.records, username, password)
    except FondsError as exc:
        console.print(f"[red]Refused:[/red] {exc.body()['error']}")
        raise typer.Exit(1) from None
    finally:
        services.db.dispose()
    console.print(f"Password of {username!r} changed; their sessions have ended")


def _read_records(path: Path) -> list:
    """A JSON array of records, or one record per line (newline-delimited JSON)."""
    import orjson

    text = path.read_bytes()
    if text.lstrip().startswith(b"["):
        return orjson.loads(text)
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@cli.command("import")
def import_records(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="JSON array or newline-delimited JSON of records.")],
    repository: Annotated[int, typer.Option("--repository", "-r", help="Id of the repository the records go into.")],
    config: ConfigOption = None,
):
    """Import records that refer to each other by temporary URIs, as ArchivesSpace's batch_imports: all or none."""
    import orjson
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    from fonds.bootstrap import SYSTEM
    from fonds.errors import FondsError
    from fonds.records.imports import import_batch
    from fonds.storage import statistics

    try:
        records = _read_records(file)
    except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        console.print(f"[red]Not JSON:[/red] {exc}")
        raise typer.Exit(2) from None
    services = _services(config)
    # One import: validating it in another process would only add the start of that process.
    services.records.import_validation.close()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(show_speed=True),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, console=console) as bar:
            total = len(records) if isinstance(records, list) else 0
            # A bar for each step: the records are all validated before the first is written.
            tasks = {step: bar.add_task(step, total=total) for step in ("validated", "written")}
            imported = import_batch(
                services.records,
                records,
                repo_id=repository,
                actor=SYSTEM,
                may_create=lambda record_type: True,
                progress=lambda step, done: bar.update(tasks[step], completed=done),
            )
        statistics.after_bulk_load(services.db, imported.types, imported.count)
    except FondsError as exc:
        console.print(f"[red]Nothing imported:[/red] {orjson.dumps(exc.body()['error']).decode()}")
        raise typer.Exit(1) from None
    finally:
        services.db.dispose()
    out.print(f"Imported {imported.count} records into repository {repository}")
    out.print_json(data={"saved": imported.saved})


def _list_change():
    from fonds.records.enumerations import Change
    from fonds.storage.records import utcnow

    return Change("admin", utcnow())


@enumerations_cli.command("list")
def enumerations_list(
    name: Annotated[str | None, typer.Argument(help="A list's name: show its values.")] = None,
    config: ConfigOption = None,
):
    """Show every value list, or the values of one."""
    from rich.table import Table

    from fonds.errors import FondsError

    services = _services(config)
    try:
        lists = [services.enumerations.by_name(name)] if name else services.enumerations.listing()
    except FondsError as exc:
        console.print(f"[red]No list named {name!r}[/red] ({exc.body()['error']})")
        raise typer.Exit(1) from None
    finally:
        services.db.dispose()
    if name:
        [enum] = lists
        table = Table(title=f"{enum['name']} ({'editable' if enum['editable'] else 'not editable'}) {enum['uri']}")
        for column in ("id", "position", "value", "flags"):
            table.add_column(column, justify="right" if column in ("id", "position") else "left")
        for value in enum["enumeration_values"]:
            flags = [
                f
                for f, on in (
                    ("default", value["value"] == enum.get("default_value")),
                    ("read-only", value["readonly"]),
                    ("suppressed", value["suppressed"]),
                )
                if on
            ]
            table.add_row(str(value["id"]), str(value["position"]), value["value"], ", ".join(flags))
    else:
        table = Table(title=f"{len(lists)} value lists")
        for column in ("id", "name", "editable", "values", "default"):
            table.add_column(column, justify="right" if column in ("id", "values") else "left")
        for enum in lists:
            hidden = len(enum["enumeration_values"]) - len(enum["values"])
            count = f"{len(enum['values'])}" + (f" (+{hidden} suppressed)" if hidden else "")
            table.add_row(
                str(enum["uri"].rsplit("/", 1)[1]), enum["name"], "yes" if enum["editable"] else "no", count, enum.get("default_value", "")
            )
    out.print(table)


@enumerations_cli.command("add")
def enumerations_add(
    name: Annotated[str, typer.Argument(help="The list, e.g. extent_extent_type.")],
    value: Annotated[str, typer.Argument(help="The value to add at the end of the list.")],
    config: ConfigOption = None,
):
    """Add a value to a list (records may then use it without a warning)."""
    from fonds.errors import FondsError
    from fonds.records.enumeration_import import add_value

    services = _services(config)
    try:
        added, value_id = add_value(services.db, name, value, _list_change())
    except FondsError as exc:
        console.print(f"[red]Refused:[/red] {_describe(exc)}")
        raise typer.Exit(1) from None
    finally:
        services.db.dispose()
    if added:
        out.print(f"Added [bold]{value.strip()}[/bold] to {name} (/config/enumeration_values/{value_id})")
    else:
        out.print(f"{name} already has [bold]{value.strip()}[/bold] (/config/enumeration_values/{value_id}); nothing changed")


@enumerations_cli.command("import")
def enumerations_import(
    file: Annotated[Path, typer.Argument(help="ArchivesSpace's GET /config/enumerations output (JSON).", exists=True, dir_okay=False)],
    config: ConfigOption = None,
):
    """Merge an ArchivesSpace instance's lists into ours: new lists and values are added, its
    suppressed values and defaults adopted; values only Fonds has stay. Safe to run again."""
    import json

    from rich.table import Table

    from fonds.errors import FondsError
    from fonds.records.enumeration_import import import_lists

    try:
        exported = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        console.print(f"[red]Cannot read {file}:[/red] {exc}")
        raise typer.Exit(2) from None
    services = _services(config)
    try:
        report = import_lists(services.db, exported, _list_change())
    except FondsError as exc:
        console.print(f"[red]Refused:[/red] {_describe(exc)}")
        raise typer.Exit(1) from None
    finally:
        services.db.dispose()
    changed = [merged for merged in report if merged.changed]
    if changed:
        table = Table(title=f"Imported from {file.name}")
        for column in ("list", "change"):
            table.add_column(column)
        for merged in changed:
            table.add_row(merged.name, _describe_merge(merged))
        out.print(table)
    created = sum(m.created for m in report)
    added = sum(len(m.added) for m in report if not m.created)
    out.print(
        f"{len(report)} lists read: {created} created, {added} values added to existing lists, {len(report) - len(changed)} unchanged"
    )


def _describe_merge(merged) -> str:
    parts = [f"new list with {len(merged.added)} values"] if merged.created else []
    if merged.added and not merged.created:
        parts.append("added " + ", ".join(merged.added))
    if merged.suppressed:
        parts.append("suppressed " + ", ".join(merged.suppressed))
    if merged.unsuppressed:
        parts.append("restored " + ", ".join(merged.unsuppressed))
    if merged.default:
        parts.append(f"default {merged.default}")
    return "; ".join(parts)


def _describe(exc) -> str:
    error = exc.body()["error"]
    if isinstance(error, dict):
        return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in error.items())
    return str(error)


def _search_services(config: Path | None):
    """The database and a search engine that is not started: these commands never take the
    writer lock, so they run beside a serving `fonds serve`."""
    from fonds.app import open_services

    return open_services(_settings(config))


@cli.command()
def reindex(config: ConfigOption = None):
    """Rebuild the search index from the database while the service keeps answering from the
    old one, then switch to the new one (the running indexer applies what changed meanwhile)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from fonds.search.indexer import count_searchable, rebuild

    services = _search_services(config)
    engine = services.search
    try:
        total = count_searchable(services.db, services.registry)
        columns = (
            TextColumn("Reindexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} records/s"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("reindex", total=total, rate="-")

            def advance(count: int) -> None:
                progress.advance(task, count)
                speed = progress.tasks[0].speed
                progress.update(task, rate=f"{speed:,.0f}" if speed else "-")

            name = rebuild(engine.directory, services.db, engine.builder, advance)
    finally:
        services.db.dispose()
    console.print(f"Search index rebuilt: {total:,} records in {name} (now live)")


@cli.command("search-status")
def search_status(config: ConfigOption = None):
    """Report the search index: the change-log sequence applied, the lag behind the database, its size."""
    services = _search_services(config)
    try:
        status = services.search.status()
    finally:
        services.db.dispose()
    console.print(f"Generation:        {status.generation or '(none: it is built at the next start)'}")
    console.print(f"Applied sequence:  {status.applied}")
    console.print(f"Database sequence: {status.head}")
    console.print(f"Lag:               {status.lag} change(s)")
    console.print(f"Documents:         {status.documents:,}")
    console.print(f"Size:              {status.size_bytes / 1_048_576:,.1f} MiB")


@cli.command("search-prune")
def search_prune(
    through: Annotated[
        int | None, typer.Option(help="Delete change-log rows up to this sequence (default: what this node's index has applied).")
    ] = None,
    config: ConfigOption = None,
):
    """Delete change-log rows the search index no longer needs (with several nodes, give the
    smallest applied sequence that `fonds search-status` reports on any of them)."""
    from fonds.storage import change_log

    services = _search_services(config)
    try:
        limit = services.search.status().applied if through is None else through
        with services.db.write() as conn:
            removed = change_log.prune(conn, limit)
    finally:
        services.db.dispose()
    console.print(f"Removed {removed:,} change-log row(s) up to sequence {limit}")


def main() -> None:
    cli()
