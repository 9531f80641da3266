"""The access-log filter hides secrets whatever way their parameter's name is written, in query
strings and in form-encoded bodies (the real server's log is checked in tests/test_cli.py)."""

from __future__ import annotations

import logging

import pytest

from fonds.log_config import RedactSecrets, redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/users/admin/login?password=s3cret", "/users/admin/login?password=[redacted]"),
        ("/users/admin/login?pass%77ord=s3cret&expiring=false", "/users/admin/login?pass%77ord=[redacted]&expiring=false"),
        ("/users/admin/login?%70%61%73%73%77%6f%72%64=s3cret", "/users/admin/login?%70%61%73%73%77%6f%72%64=[redacted]"),
        ("/users?PassWord=s3cret&groups[]=/repositories/2/groups/1", "/users?PassWord=[redacted]&groups[]=/repositories/2/groups/1"),
        ("password=s3cret&expiring=true", "password=[redacted]&expiring=true"),
        ("expiring=true&pass%77ord=s3cret", "expiring=true&pass%77ord=[redacted]"),
        ("/users/password-reset?passwords=kept", "/users/password-reset?passwords=kept"),
    ],
)
def test_redact_decodes_parameter_names(text, expected):
    assert redact(text) == expected


def test_the_filter_rewrites_uvicorn_access_records():
    record = logging.LogRecord("uvicorn.access", logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d', None, None)
    record.args = ("127.0.0.1:5000", "POST", "/users/admin/login?pass%77ord=s3cret", "1.1", 200)
    assert RedactSecrets().filter(record)
    assert "s3cret" not in record.getMessage()
