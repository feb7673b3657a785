"""The ``burster`` command. Each subcommand lives in its own module with a ``register`` function."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from burster.errors import BursterError

# Subcommand modules, in help order. A module exposes ``register(subparsers)`` which adds its
# parser and sets ``func(args) -> int`` as the default.
COMMANDS = (
    "burster.cli.simulate",
    "burster.cli.config_cmd",
    "burster.cli.bench",
    "burster.cli.agent",
    "burster.cli.offerings",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burster",
        description="Hybrid-cloud GPU burst autoscaler and cost controller.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except BursterError as err:
        print(f"burster: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("burster: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
