"""Every test gets its own app on a fresh database: a temporary SQLite file by default, or a
clean schema of the PostgreSQL database named by FONDS_TEST_DATABASE_URL."""

from __future__ import annotations

import os
import warnings

import pytest
from sqlalchemy import create_engine, text

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from fonds.app import create_app
from fonds.config import load_settings
from fonds.storage.db import normalise_url

from tests.factories import ADMIN_PASSWORD, Api

PG_URL = os.environ.get("FONDS_TEST_DATABASE_URL")


def _fresh_postgres_url() -> str:
    """A clean schema per xdist worker, recreated for each test."""
    schema = "fonds_test_" + os.environ.get("PYTEST_XDIST_WORKER", "main")
    base = normalise_url(PG_URL)
    engine = create_engine(base)
    with engine.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    engine.dispose()
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options=-csearch_path%3D{schema}"


@pytest.fixture
def settings_overrides() -> dict:
    """Override in a test module to change settings."""
    return {}


@pytest.fixture
def settings(tmp_path, settings_overrides):
    url = _fresh_postgres_url() if PG_URL else None
    values = {"data_dir": tmp_path / "data", "database_url": url, "admin_password": ADMIN_PASSWORD, **settings_overrides}
    return load_settings(env={}, **values)


@pytest.fixture
def app(settings):
    application = create_app(settings)
    yield application
    application.state.fonds.db.dispose()


@pytest.fixture
def client(app) -> TestClient:
    """An anonymous client."""
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def api(app) -> Api:
    """A client logged in as the admin user, with record factories."""
    return Api.login(TestClient(app, raise_server_exceptions=False))


@pytest.fixture
def repo(api) -> int:
    return api.create_repository("MSS")
