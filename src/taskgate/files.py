"""Reading a user's input file: every failure is a :class:`LogFormatError` that names the file.

A missing or unreadable file, bytes that are not UTF-8 and JSON that does not parse each end in
one line (``cannot read tasks file x.json: No such file or directory``), never a raw OS, decoding
or JSON error without the file's name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taskgate.errors import LogFormatError


def read_text(path: Path, what: str) -> str:
    """The file's text; ``what`` says what it should be (``"tasks file"``)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"{what} {path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise LogFormatError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def read_json(path: Path, what: str) -> Any:
    """The file's JSON value."""
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogFormatError(
            f"{what} {path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise LogFormatError(f"{what} {path} nests its JSON too deeply") from None
