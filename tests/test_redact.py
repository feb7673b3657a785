"""burster.redact: what a message may show of a URL or a value that holds one."""

from __future__ import annotations

import pytest

from burster.redact import redact, redact_value


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
