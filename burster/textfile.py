"""Reading a (possibly gzip-compressed) UTF-8 text file, with errors that name the file and the fix.

Shared by the trace loaders and the price catalog: a missing file, a folder, bytes that are not
gzip or not UTF-8, and a cut-off gzip stream each become an InputError, never a traceback.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

from burster.errors import InputError


def reject_folder(path: Path, what: str = "file") -> None:
    """A clear InputError where a ``what`` (e.g. "trace file") is expected but ``path`` is a folder."""
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a {what}; give the path of the file inside it")


def open_binary(path: Path, what: str = "file") -> gzip.GzipFile | io.BufferedReader:
    """Open a (possibly gzip-compressed) file; a clear InputError if it is missing or a folder."""
    reject_folder(path, what)
    try:
        return gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb")
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open it ({exc.strerror or exc})") from None


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turn the errors of reading a damaged file into an InputError naming the file."""
    try:
        yield
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        if "Not a gzipped file" in str(exc):
            raise InputError(f"{path}: not gzip data; drop the .gz from its name if it is plain text") from None
        raise InputError(f"{path}: damaged or truncated gzip data ({exc}); copy or export it again") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def text_lines(path: Path, what: str = "file") -> Generator[str, None, None]:
    """The lines of a (possibly gzip-compressed) UTF-8 text file, without a leading BOM."""
    with reading(path), open_binary(path, what) as raw, \
            io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as fh:
        try:
            yield from fh
        except UnicodeDecodeError:
            raise InputError(f"{path}: not UTF-8 text ({_first_bad_byte(path)}); save it as UTF-8") from None


def _first_bad_byte(path: Path) -> str:
    """Where the first byte that is not UTF-8 is, e.g. "byte 0xff at line 2, byte 36 of the line"."""
    with open_binary(path) as fh:
        for number, line in enumerate(fh, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return f"byte 0x{line[exc.start]:02x} at line {number}, byte {exc.start + 1} of the line"
    return "a byte sequence that is cut short"
