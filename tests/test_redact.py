"""burster.redact: what a message may show of a URL or a value that holds one."""

from __future__ import annotations

import pytest

from burster.redact import redact, redact_url, redact_value


@pytest.mark.parametrize(("text", "shown"), [
    ("https://host.example/x", "https://host.example/x"),
    ("https://user:pw@host.example/x", "https://***@host.example/x"),
    ("http://user:pa/ss@host:8080", "http://***@host:8080"),  # a "/" in the password
    ("http://user:pa?ss@host", "http://***@host"),  # a "?" in the password
    ("admin:hunter2@10.0.0.5:8080", "***@10.0.0.5:8080"),  # no scheme
    ("https://host/x?sig=t0ken#frag", "https://host/x?***"),
    ("got 'postgresql://a:b@db/x' and 'https://h/?k=v'", "got 'postgresql://***@db/x' and 'https://h/?***'"),
])
def test_credentials_and_query_strings_are_masked(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_values_are_masked_inside_lists_and_maps() -> None:
    value = [{"a": "https://u:s3cret@h/?sig=s3cret"}, ("x:s3cret@y", 3)]
    assert "s3cret" not in repr(redact_value(value))
    assert redact_value(7) == 7


@pytest.mark.parametrize("password", ["s3cr'etPW", 's3cr"etPW', "s3cr etPW", "pa/ss@w:rdPW", "hunter2PW"])
def test_a_whole_url_is_masked_whatever_its_password_holds(password: str) -> None:
    """SQLAlchemy takes anything but "@" as a raw password (and the last "@" ends it): a store URL
    shown on its own has all of it masked, not only what follows a quote or a space."""
    shown = redact_url(f"postgresql+psycopg2://burster:{password}@127.0.0.1:5432/burster?sslmode=require")
    assert shown == "postgresql+psycopg2://***@127.0.0.1:5432/burster?***"
    assert redact_url("sqlite:////tmp/b.db") == "sqlite:////tmp/b.db"
    assert redact_url("https://h/x?token=s3cr3t tok#frag") == "https://h/x?***"  # a space in the query too


def test_a_store_url_password_never_reaches_the_error(capsys: pytest.CaptureFixture[str]) -> None:
    from burster.cli import main

    url = "postgresql+psycopg2://burster:s3cr'et PW@127.0.0.1:1/burster"
    assert main(["simulate", "--demo", "--days", "0.01", "--store", url]) == 2
    err = capsys.readouterr().err
    assert "state store 'postgresql+psycopg2://***@127.0.0.1:1/burster' cannot be opened" in err
    assert "s3cr" not in err and "et PW" not in err
