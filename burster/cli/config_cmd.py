"""``burster config``: configuration helpers. ``from-terraform`` prints cloud sections from Terraform."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from burster.errors import InputError
from burster.tfconfig import CLOUDS, config_from_terraform


def register(subparsers: Any) -> None:
    """Add ``burster config`` and its ``from-terraform`` subcommand."""
    parser = subparsers.add_parser("config", help="configuration helpers")
    parser.set_defaults(func=lambda _args: _help(parser))
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    tf = sub.add_parser(
        "from-terraform",
        help="print [clouds.*] config sections from `terraform output -json`",
        description=(
            "Read `terraform output -json` of one or more example roots under terraform/examples "
            "and print the matching [clouds.aws], [clouds.gcp] or [clouds.azure] section, validated."
        ),
    )
    tf.add_argument("--cloud", choices=CLOUDS, help="accept only this cloud's outputs")
    tf.add_argument(
        "files", nargs="*", metavar="FILE", default=["-"],
        help="files holding `terraform output -json`; '-' or none reads standard input",
    )
    tf.set_defaults(func=run_from_terraform)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _decode(name: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        hint = " (UTF-16: Windows PowerShell's `>` writes it; pipe into `Out-File -Encoding utf8`)" \
            if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise InputError(f"{name} is not UTF-8 text{hint}; expected `terraform output -json`") from None


def _read(name: str) -> tuple[str, str]:
    if name == "-":
        return "<stdin>", _decode("<stdin>", sys.stdin.buffer.read())
    try:
        return name, _decode(name, Path(name).read_bytes())
    except OSError as err:
        raise InputError(f"cannot read {name}: {err.strerror or err}") from None


def run_from_terraform(args: argparse.Namespace) -> int:
    """Print the TOML sections; errors surface as BursterError (exit code 2 from ``main``)."""
    sources = [_read(name) for name in args.files]
    sys.stdout.write(config_from_terraform(sources, cloud=args.cloud))
    return 0
