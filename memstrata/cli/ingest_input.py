"""Refusing ingest inputs that cannot hold conversations, with a message that says why.

A directory, an empty file, or a file read in the wrong format used to exit 0
having stored nothing; each is a usage error now (exit 2) that names the file
and, where the format was forced, the format the file looks like.
"""

from __future__ import annotations

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
    return None


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
