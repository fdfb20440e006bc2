"""Refusing ingest inputs that cannot hold conversations, with a message that says why.

A directory, an empty file, a binary or non-UTF-8 file, or a file read in the
wrong format used to exit 0 having stored nothing (or end in a traceback);
each is a usage error now (exit 2) that names the file and, where the format
was forced, the format the file looks like. ``ingest`` and ``produce`` share it.
"""

from __future__ import annotations

import codecs
from pathlib import Path

_PEEK = 4096


def unusable_path(path: Path) -> str | None:
    """Why ``path`` cannot be ingested at all (directory, empty file), or None."""
    if path.is_dir():
        return (f"{path}: is a directory; ingest takes one file "
                f"(for f in {path}/*.jsonl; do memstrata ingest \"$f\"; done)")
    if path.is_file():
        with path.open("rb") as fh:  # a peek: a big file is never read whole here
            head = fh.read(_PEEK)
        if not head.strip() and path.stat().st_size <= _PEEK:
            return f"{path}: the file is empty; nothing to ingest"
        return not_text(path, head)
    return None


def not_text(path: Path, head: bytes) -> str | None:
    """Why the first bytes of ``path`` are not UTF-8 text (binary data, another encoding)."""
    if (nul := head.find(b"\x00")) >= 0:
        return (f"{path}: binary data, not a text file (a NUL byte at offset {nul}); "
                f"ingest reads UTF-8 JSON or JSONL")
    try:  # incremental: a character cut by the end of the peek is not an error
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        return undecodable(path, exc)
    return None


def undecodable(path: Path, exc: UnicodeDecodeError) -> str:
    """The one-line message for a file that is not UTF-8 where it was read."""
    bad = exc.object[exc.start:exc.start + 1].hex() if exc.object else "?"
    where = f" (byte 0x{bad} at offset {exc.start})" if exc.object is not None else ""
    return (f"{path}: not UTF-8 text{where}; ingest reads UTF-8 JSON or JSONL: convert it "
            f"first (e.g. iconv -f latin1 -t utf-8 {path.name} > {path.stem}.utf8{path.suffix})")


def nothing_read(path: Path, requested: str, read_as: str, skipped: int) -> str:
    """The message for a file that yielded no conversation, with a format hint if one fits."""
    from memstrata.ingest.formats import FormatError, detect_format

    hint = ""
    if requested != "auto":
        try:
            guess: str | None = detect_format(path)
        except (FormatError, OSError, UnicodeDecodeError):
            guess = None
        if guess is not None and guess != read_as:
            hint = f"; the file looks like {guess}: try --format {guess} (or auto)"
    return (f"{path}: no conversations read as {read_as} ({skipped} records skipped); "
            f"nothing ingested{hint}")
