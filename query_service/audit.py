"""The audit log: who deleted, exported, changed keys or made admin calls, and when.

An append-only JSONL file (default ``<data dir>/audit.jsonl``,
``MEMSTRATA_SERVICE_AUDIT_FILE``), created 0600. Each entry is one line written
with one ``write`` under an exclusive ``flock`` (the service and the ``keys``
commands may append at once) and fsynced before the call returns. Each line
holds ``prev``, the ``hash`` of the line before it, and its own ``hash`` (SHA-256
of the line's other fields, ``prev`` included), so an edited, removed or
reordered line breaks the chain: :func:`verify` (``memstrata audit verify``)
names the first line that does not fit. No RPC changes or removes entries;
``ReadAudit`` only reads them.

An entry holds who (the key id, or ``cli`` and the OS user), what (the RPC or
command), the tenant, user and session, how many records, the outcome and a
short detail (a refusal's reason). Never message content: the fields are fixed
and filled from ids and counts only.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: File name in the data dir when no ``MEMSTRATA_SERVICE_AUDIT_FILE`` is set.
AUDIT_FILE = "audit.jsonl"
#: ``prev`` of the first line.
GENESIS = "0" * 64
#: The fields of an entry, in the order they are written (then ``prev`` and ``hash``).
FIELDS = ("seq", "ts", "via", "key_id", "action", "tenant", "user", "session", "records",
          "outcome", "detail")
#: Longest ``detail`` kept (a refusal's reason; never content).
MAX_DETAIL = 300
_TAIL_CHUNK = 8192


class AuditError(RuntimeError):
    """The audit log cannot be read; the message names the file and the line."""


def _digest(fields: dict[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _last_line(fd: int) -> bytes | None:
    """The file's last complete, non-empty line (None: there is none).

    A line without its newline (a write torn by a crash) is not complete: the
    next entry chains from the line before it, and :func:`verify` reports it.
    """
    end = os.fstat(fd).st_size
    buf = b""
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        buf = os.pread(fd, end - start, start) + buf
        end = start
        complete = buf.split(b"\n")[:-1]  # the last piece is b"" or a torn line
        if start > 0:
            complete = complete[1:]  # may begin mid-line
        lines = [line for line in complete if line.strip()]
        if lines:
            return lines[-1]
    return None


class AuditLog:
    """Appends entries to the audit file (thread-safe; other processes wait on ``flock``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, *, action: str, via: str = "rpc", key_id: str = "", tenant: str = "",
               user: str = "", session: str = "", records: int | None = None,
               outcome: str = "OK", detail: str = "") -> dict[str, Any]:
        """Write one entry, fsynced; return it. Raises OSError when it cannot be written."""
        body: dict[str, Any] = {"ts": _now(), "via": via, "key_id": key_id, "action": action,
                                "tenant": tenant, "user": user, "session": session,
                                "records": records, "outcome": outcome,
                                "detail": detail[:MAX_DETAIL]}
        with self._lock:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if os.fstat(fd).st_mode & 0o077:
                    os.fchmod(fd, 0o600)
                last = _last_line(fd)
                prev, seq = GENESIS, 0
                if last is not None:
                    try:
                        head = json.loads(last)
                        prev, seq = str(head["hash"]), int(head["seq"])
                    except (ValueError, KeyError, TypeError):
                        raise AuditError(f"audit log {self.path}: its last line is not an "
                                         f"entry; run `memstrata audit verify`") from None
                entry = {"seq": seq + 1, **body, "prev": prev}
                entry["hash"] = _digest(entry)
                line = json.dumps(entry, ensure_ascii=True, separators=(",", ":")) + "\n"
                if os.fstat(fd).st_size and os.pread(fd, 1, os.fstat(fd).st_size - 1) != b"\n":
                    line = "\n" + line  # end a torn line first: verify reports it
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)  # drops the lock
        return entry

    def append_quietly(self, **fields: Any) -> None:
        """:meth:`append`, logging (not raising) a failure: the action it records is done."""
        try:
            self.append(**fields)
        except (OSError, AuditError) as exc:
            log.error("audit log %s: cannot append an entry for %s (%s)", self.path,
                      fields.get("action"), exc)


def read_entries(path: Path) -> Iterator[dict[str, Any]]:
    """Every entry, in order (an absent file has none). Raises AuditError for a bad line."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        for n, raw in enumerate(fh, 1):
            try:
                entry = json.loads(raw)
                if not isinstance(entry, dict):
                    raise ValueError
            except ValueError:
                raise AuditError(f"audit log {path}: line {n} is not an entry") from None
            yield entry


def page(path: Path, *, tenants: set[str] | None = None, after_seq: int = 0,
         limit: int = 100) -> tuple[list[dict[str, Any]], int]:
    """Up to ``limit`` entries after ``after_seq`` (of ``tenants`` only, when given), and
    the seq to ask from next (0: no more)."""
    out: list[dict[str, Any]] = []
    for entry in read_entries(path):
        if int(entry.get("seq", 0)) <= after_seq:
            continue
        if tenants is not None and entry.get("tenant") not in tenants:
            continue
        if len(out) == limit:
            return out, int(out[-1]["seq"])
        out.append(entry)
    return out, 0


@dataclass
class Verdict:
    """What :func:`verify` found: entries checked, the last hash, the problems (by line)."""

    entries: int = 0
    head: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(path: Path, *, max_problems: int = 20) -> Verdict:
    """Check every line's hash and its link to the line before; name the lines that fail."""
    verdict = Verdict()
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return verdict
    prev, seq = GENESIS, 0
    with fh:
        for n, raw in enumerate(fh, 1):
            if len(verdict.problems) >= max_problems:
                verdict.problems.append("(more problems not listed)")
                break
            try:
                entry = json.loads(raw)
                claimed = entry.pop("hash")
                if not isinstance(entry, dict) or not isinstance(claimed, str):
                    raise ValueError
            except (ValueError, KeyError, TypeError, AttributeError):
                verdict.problems.append(f"line {n}: not an audit entry (edited, or a write "
                                        f"torn by a crash)")
                continue
            verdict.entries += 1
            if _digest(entry) != claimed:
                verdict.problems.append(f"line {n}: its content does not match its hash "
                                        f"(the line was edited)")
            if entry.get("prev") != prev:
                verdict.problems.append(f"line {n}: does not follow the line before it (a "
                                        f"line was removed, inserted or edited before it)")
            if entry.get("seq") != seq + 1:
                verdict.problems.append(f"line {n}: seq {entry.get('seq')} after {seq}")
            prev, seq = claimed, int(entry.get("seq") or 0)
    verdict.head = prev
    return verdict


__all__ = ["AUDIT_FILE", "AuditError", "AuditLog", "FIELDS", "GENESIS", "Verdict", "page",
           "read_entries", "verify"]
