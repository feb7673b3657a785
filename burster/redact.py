"""Masking secrets in text shown to people: URL credentials and query strings."""

from __future__ import annotations

import re

# everything up to the last "@" of a token, after an optional scheme: "http://user:pa/ss@" or
# "admin:hunter2@" (a URL without a scheme), whatever the password holds
_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)?[^\s'\"]*@", re.IGNORECASE)
_QUERY = re.compile(r"[?#][^\s'\"]*")  # a query string or fragment may carry a token


def redact(text: str) -> str:
    """``text`` with any ``user:password@`` masked as ``***@`` and query strings as ``?***``."""
    return _QUERY.sub("?***", _USERINFO.sub(r"\1***@", text))


def redact_url(url: str) -> str:
    """A whole URL given on its own (a store or controller URL), its credentials masked whatever
    the password holds (quotes, spaces, slashes: all but the host after the last "@" go)."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        url = f"{scheme}://***@{rest.rpartition('@')[2]}"
    elif not sep and "@" in url:  # "admin:pass word@host"
        url = f"***@{url.rpartition('@')[2]}"
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=-1)
    return redact(url if cut < 0 else url[:cut] + "?***")


def redact_value(value: object) -> object:
    """``value`` with every string in it (also inside lists and maps) masked as a whole URL (``redact_url``):
    a config value is one URL or name, and its password may hold a quote or a space."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value
