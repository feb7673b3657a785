"""The ``burster`` command. Each subcommand lives in its own module with a ``register`` function."""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import os
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


def finite_float(text: str) -> float:
    """An argparse type: a finite number (``nan`` and ``inf`` are refused with a usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burster",
        description="Hybrid-cloud GPU burst autoscaler and cost controller.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


class _Stderr(logging.Handler):
    """Prints records as ``burster: message`` to the sys.stderr of the moment."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"burster: {self.format(record)}", file=sys.stderr)


def show_load_summaries() -> None:
    """Let the trace, price-catalog and signals-file loaders' one-line summaries (what loaded, which
    rows or columns were left out and why) reach stderr."""
    for name in ("burster.traces", "burster.catalog", "burster.signals"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, _Stderr) for h in logger.handlers):
            logger.addHandler(_Stderr())
            logger.setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    show_load_summaries()
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
    except BrokenPipeError:  # the reader went away (``burster ... | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
