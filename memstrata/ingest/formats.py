"""Readers for the input formats ``memstrata ingest`` accepts.

* LoCoMo JSON: a list of conversations; one user per conversation
  (``sample_id``), ``speaker_a`` plays the user role, ``speaker_b`` the
  assistant role, and each message keeps its ``dia_id``.
* LongMemEval JSON: a list of questions; one user per question
  (``question_id``) holding its dated haystack sessions.
* JSONL: one :class:`~memstrata.model.TurnEvent` per line; a session takes the
  labels of its first line when that line has them, and the header line that
  ``memstrata export`` writes first (``{"memstrata_export": {...}}``) is skipped.

Bad records never stop a file: each becomes an :class:`IngestIssue` naming the
line (or record) and field, and the rest is read. A user message that has to
be skipped takes its whole turn with it (the replies to a question nobody can
read are not a turn of their own), and the issue says so.

Files are read as streams (:class:`Source`), so memory stays flat however
large the file: JSON lists are parsed one record at a time with ijson, and
JSONL is read twice, first to check every line and note where each session's
lines are, then session by session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import ijson
from pydantic import ValidationError

from memstrata.layers.windowing import group_turns
from memstrata.model import (
    EXPORT_HEADER_KEY,
    ID_PATTERN,
    MAX_CONTENT_CHARS,
    Message,
    Role,
    Scope,
    Session,
    SessionMeta,
    TurnEvent,
    is_identifier,
)
from memstrata.text.dates import parse_datetime

Format = Literal["locomo", "longmemeval", "jsonl"]
FORMATS: tuple[str, ...] = ("auto", "locomo", "longmemeval", "jsonl")
#: Issues kept in full (the rest are only counted), so a file of bad lines stays cheap.
MAX_KEPT_ISSUES = 1000


@dataclass(frozen=True, slots=True)
class IngestIssue:
    """Why one record was skipped: where it is, which field, what is wrong."""

    where: str
    field: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.where}: field {self.field!r}: {self.message}" if self.field else \
            f"{self.where}: {self.message}"


@dataclass
class Parsed:
    """Sessions read from a file, plus the records that were skipped."""

    format: Format
    sessions: list[Session] = field(default_factory=list)
    issues: list[IngestIssue] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


class FormatError(ValueError):
    """The file as a whole cannot be read (not the format it claims, bad JSON...)."""


def _json_items(path: Path) -> Iterator[Any]:
    """The items of a top-level JSON list, parsed one at a time."""
    try:
        with path.open("rb") as fh:
            yield from ijson.items(fh, "item", use_float=True)
    except ijson.JSONError as exc:
        raise FormatError(f"{path}: invalid JSON: {exc}") from None


def _top_level_is_list(path: Path) -> bool:
    with path.open("rb") as fh:
        try:
            for _prefix, event, _value in ijson.parse(fh):
                return event == "start_array"
        except ijson.JSONError as exc:
            raise FormatError(f"{path}: invalid JSON: {exc}") from None
    return False


def detect_format(path: Path) -> Format:
    """Guess the format from the extension and the first record."""
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        return "jsonl"
    with path.open("r", encoding="utf-8") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith("{"):
        return "jsonl"
    if '"haystack_sessions"' in head or '"question_id"' in head:
        return "longmemeval"
    if '"conversation"' in head or '"qa"' in head or '"sample_id"' in head:
        return "locomo"
    # The first record may be longer than the peek: look at the real thing.
    first = next(iter(_json_items(path)), None) if _top_level_is_list(path) else None
    if isinstance(first, dict) and "haystack_sessions" in first:
        return "longmemeval"
    if isinstance(first, dict) and "conversation" in first:
        return "locomo"
    raise FormatError(f"{path}: cannot tell the format; pass --format locomo|longmemeval|jsonl")


class Source:
    """One input file read as a stream of sessions, in bounded memory.

    Opening it reads the file once to count sessions and turns and collect the
    issues (so progress has a total and bad records are known up front);
    :meth:`sessions` then reads it again, yielding one session at a time.
    """

    def __init__(self, path: Path, fmt: str = "auto", tenant_id: str = "default") -> None:
        if not path.is_file():
            raise FormatError(f"{path}: no such file")
        if fmt not in FORMATS:
            raise FormatError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        if not is_identifier(tenant_id):
            raise FormatError(
                f"tenant id {tenant_id!r} is not a valid id ({ID_PATTERN}, <= 128 chars)")
        self.path = path
        self.tenant_id = tenant_id
        self.format: Format = detect_format(path) if fmt == "auto" else fmt  # type: ignore
        self.issues: list[IngestIssue] = []
        self.issue_count = 0
        self.session_count = 0
        self.turns = 0
        self._jsonl: _JsonlIndex | None = None
        if self.format == "jsonl":
            self._jsonl = _JsonlIndex(path)
            items: Iterable[Session | IngestIssue] = self._jsonl.scan()
        else:
            if not _top_level_is_list(path):
                raise FormatError(f"{path}: expected a JSON list of {self.format} records")
            items = self._json_records()
        for item in items:
            if isinstance(item, IngestIssue):
                self.issue_count += 1
                if len(self.issues) < MAX_KEPT_ISSUES:
                    self.issues.append(item)
            else:
                self.session_count += 1
                self.turns += len(item.turns)
        if self._jsonl is not None:
            self.session_count, self.turns = self._jsonl.totals()

    def _json_records(self) -> Iterator[Session | IngestIssue]:
        reader = read_locomo if self.format == "locomo" else read_longmemeval
        return reader(_json_items(self.path), self.tenant_id)

    def sessions(self) -> Iterator[Session]:
        """The file's sessions, read one at a time (bad records skipped silently)."""
        items = self._jsonl.sessions() if self._jsonl else self._json_records()
        for item in items:
            if not isinstance(item, IngestIssue):
                yield item


def open_source(path: Path, fmt: str = "auto", tenant_id: str = "default") -> Source:
    """Check ``path`` and return it as a stream of sessions (see :class:`Source`)."""
    return Source(path, fmt, tenant_id)


def read_file(path: Path, fmt: str = "auto", tenant_id: str = "default") -> Parsed:
    """Read a whole file into memory: sessions and issues (small files, evaluations)."""
    source = Source(path, fmt, tenant_id)
    return Parsed(format=source.format, sessions=list(source.sessions()),
                  issues=list(source.issues))


def _check_id(value: Any, where: str, name: str) -> str | IngestIssue:
    if not isinstance(value, str) or not value:
        return IngestIssue(where, name, "missing or not a string")
    if not is_identifier(value):
        return IngestIssue(where, name, f"{value!r} is not a valid id ({ID_PATTERN}, <= 128 chars)")
    return value


def _check_content(text: Any, where: str, name: str) -> str | IngestIssue:
    if not isinstance(text, str):
        return IngestIssue(where, name, "missing or not a string")
    if len(text) > MAX_CONTENT_CHARS:
        return IngestIssue(where, name, f"{len(text)} characters, limit is {MAX_CONTENT_CHARS}")
    return text


def _session_date(raw: Any, where: str, name: str) -> datetime | None | IngestIssue:
    if raw in (None, ""):
        return None
    if not isinstance(raw, str):
        return IngestIssue(where, name, "not a string")
    parsed = parse_datetime(raw)
    if parsed is None:
        return IngestIssue(where, name, f"cannot parse date {raw!r}")
    return parsed


class _TurnGuard:
    """Drops the rest of a turn whose user message was skipped, and says so."""

    def __init__(self) -> None:
        self.skipped_at: str | None = None

    def user_skipped(self, where: str) -> None:
        self.skipped_at = where

    def keep(self, role: str, where: str) -> IngestIssue | None:
        """None to keep this (valid) message; an issue when it belongs to a skipped turn."""
        if role == "user":
            self.skipped_at = None
            return None
        if self.skipped_at is not None:
            return IngestIssue(where, None, f"dropped with its turn: the user message at "
                                            f"{self.skipped_at} was skipped")
        return None


_SESSION_KEY = re.compile(r"^session_(\d+)$")


def read_locomo(data: Iterable[Any], tenant_id: str) -> Iterator[Session | IngestIssue]:
    """LoCoMo conversations -> one user per conversation, sessions in order."""
    for n, rec in enumerate(data):
        where = f"record {n}"
        if not isinstance(rec, dict) or not isinstance(rec.get("conversation"), dict):
            yield IngestIssue(where, "conversation", "missing or not an object")
            continue
        user = _check_id(rec.get("sample_id", f"conv-{n}"), where, "sample_id")
        if isinstance(user, IngestIssue):
            yield user
            continue
        where = f"record {n} ({user})"
        conv = rec["conversation"]
        speaker_a = conv.get("speaker_a")
        scope = Scope(tenant_id=tenant_id, user_id=user)
        keys = sorted((int(m.group(1)), k) for k in conv if (m := _SESSION_KEY.match(k)))
        for num, key in keys:
            swhere = f"{where} {key}"
            turns_raw = conv[key]
            if not isinstance(turns_raw, list):
                yield IngestIssue(swhere, key, "not a list of messages")
                continue
            date = _session_date(conv.get(f"{key}_date_time"), swhere, f"{key}_date_time")
            if isinstance(date, IngestIssue):
                yield date
                continue
            messages: list[Message] = []
            guard = _TurnGuard()
            for i, msg in enumerate(turns_raw):
                mwhere = f"{swhere}[{i}]"
                if not isinstance(msg, dict):
                    yield IngestIssue(mwhere, None, "message is not an object")
                    continue
                speaker = msg.get("speaker")
                role: Role = "user" if speaker == speaker_a else "assistant"
                text = _check_content(msg.get("text"), mwhere, "text")
                if isinstance(text, IngestIssue):
                    if role == "user":
                        guard.user_skipped(mwhere)
                    yield text
                    continue
                caption = msg.get("blip_caption")
                if isinstance(caption, str) and caption.strip():
                    text = f"{text} [shares a photo of {caption.strip()}]"
                if not isinstance(speaker, str) or not speaker:
                    yield IngestIssue(mwhere, "speaker", "missing or not a string")
                    continue
                dropped = guard.keep(role, mwhere)
                if dropped:
                    yield dropped
                    continue
                dia = msg.get("dia_id")
                messages.append(Message(role=role, content=text[:MAX_CONTENT_CHARS],
                                        speaker=speaker,
                                        source_id=dia if isinstance(dia, str) else None))
            if not messages:
                continue
            meta = SessionMeta(scope=scope, session_id=f"session_{num}", session_date=date,
                               labels={"source": "locomo", "sample_id": user})
            yield Session(meta=meta, turns=group_turns(messages))


def read_longmemeval(data: Iterable[Any], tenant_id: str) -> Iterator[Session | IngestIssue]:
    """LongMemEval questions -> one user per question with its haystack sessions."""
    for n, rec in enumerate(data):
        where = f"record {n}"
        if not isinstance(rec, dict):
            yield IngestIssue(where, None, "record is not an object")
            continue
        user = _check_id(rec.get("question_id"), where, "question_id")
        if isinstance(user, IngestIssue):
            yield user
            continue
        where = f"record {n} ({user})"
        ids, dates, sessions = (rec.get(k) for k in
                                ("haystack_session_ids", "haystack_dates", "haystack_sessions"))
        bad = next((k for k, v in (("haystack_session_ids", ids), ("haystack_dates", dates),
                                   ("haystack_sessions", sessions)) if not isinstance(v, list)),
                   None)
        if bad:
            yield IngestIssue(where, bad, "missing or not a list")
            continue
        assert isinstance(ids, list) and isinstance(dates, list) and isinstance(sessions, list)
        if not len(ids) == len(dates) == len(sessions):
            yield IngestIssue(where, "haystack_sessions",
                              f"lengths differ: {len(ids)} ids, {len(dates)} dates, "
                              f"{len(sessions)} sessions")
            continue
        scope = Scope(tenant_id=tenant_id, user_id=user)
        for j, (sid, raw_date, msgs) in enumerate(zip(ids, dates, sessions)):
            swhere = f"{where} haystack_sessions[{j}]"
            sid_ok = _check_id(sid, swhere, "haystack_session_ids")
            if isinstance(sid_ok, IngestIssue):
                yield sid_ok
                continue
            date = _session_date(raw_date, swhere, "haystack_dates")
            if isinstance(date, IngestIssue):
                yield date
                continue
            if not isinstance(msgs, list):
                yield IngestIssue(swhere, "haystack_sessions", "not a list of messages")
                continue
            messages = []
            guard = _TurnGuard()
            for i, msg in enumerate(msgs):
                mwhere = f"{swhere}[{i}]"
                role = msg.get("role") if isinstance(msg, dict) else None
                if role not in ("user", "assistant"):
                    yield IngestIssue(mwhere, "role", f"must be 'user' or 'assistant', got {role!r}")
                    continue
                text = _check_content(msg.get("content"), mwhere, "content")
                if isinstance(text, IngestIssue):
                    if role == "user":
                        guard.user_skipped(mwhere)
                    yield text
                    continue
                dropped = guard.keep(role, mwhere)
                if dropped:
                    yield dropped
                    continue
                messages.append(Message(role=role, content=text, source_id=f"{sid_ok}:{i}"))
            if messages:
                meta = SessionMeta(scope=scope, session_id=sid_ok, session_date=date,
                                   labels={"source": "longmemeval", "question_id": user})
                yield Session(meta=meta, turns=group_turns(messages))


_Key = tuple[str, str, str]


@dataclass
class _JsonlSession:
    meta: SessionMeta
    #: Byte ranges [start, end) of the file holding this session's lines.
    runs: list[list[int]] = field(default_factory=list)
    turns: int = 0
    guard: _TurnGuard = field(default_factory=_TurnGuard)


@dataclass
class _Line:
    """One JSONL line: an event or its issues, and the session it names (if it names one)."""

    event: TurnEvent | None = None
    issues: list[IngestIssue] = field(default_factory=list)
    key: _Key | None = None
    user: bool = False


class _JsonlIndex:
    """Where each session's lines are in a JSONL file, so sessions can be read one by one.

    Sessions keep the order of their first line and the metadata of their
    first event, as if the whole file had been grouped in memory; what is
    kept per session is its metadata, its byte ranges and a turn count.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index: dict[_Key, _JsonlSession] = {}

    def scan(self) -> Iterator[IngestIssue]:
        """Check every line and note where each session's lines are; yields the issues."""
        last: _Key | None = None
        with self.path.open("rb") as fh:
            offset = 0
            for lineno, raw_line in enumerate(fh, start=1):
                start, offset = offset, offset + len(raw_line)
                line = _jsonl_line(raw_line, lineno)
                key = line.key if line.key is not None else last
                entry = self.index.get(key) if key is not None else None
                if entry is None and line.event is not None and key is not None:
                    ev = line.event
                    entry = self.index[key] = _JsonlSession(meta=SessionMeta(
                        scope=ev.scope, session_id=ev.session_id, session_date=ev.session_date,
                        labels=ev.labels if ev.labels is not None else {"source": "jsonl"}))
                if entry is not None:
                    if entry.runs and entry.runs[-1][1] == start:
                        entry.runs[-1][1] = offset  # unattributable lines keep a run whole
                    else:
                        entry.runs.append([start, offset])
                    last = key
                attributable = entry is not None and line.key is not None
                yield from _apply(line, entry.guard if attributable else None,  # type: ignore
                                  f"line {lineno}")
                if line.event is not None and entry is not None and not line.issues:
                    if line.event.role == "user" or entry.turns == 0:
                        if not (line.event.role != "user" and entry.guard.skipped_at):
                            entry.turns += 1

    def totals(self) -> tuple[int, int]:
        """(sessions, turns) found by :meth:`scan`."""
        live = [e for e in self.index.values() if e.turns]
        return len(live), sum(e.turns for e in live)

    def sessions(self) -> Iterator[Session]:
        with self.path.open("rb") as fh:
            for key, entry in self.index.items():
                guard = _TurnGuard()
                messages: list[Message] = []
                for start, end in entry.runs:
                    fh.seek(start)
                    for raw_line in fh.read(end - start).splitlines(keepends=True):
                        line = _jsonl_line(raw_line, 0)
                        if line.key != key:
                            continue
                        if not list(_apply(line, guard, "")) and line.event is not None:
                            messages.append(line.event.message())
                if messages:
                    yield Session(meta=entry.meta, turns=group_turns(messages))


def _apply(line: _Line, guard: _TurnGuard | None, where: str) -> Iterator[IngestIssue]:
    """The line's issues; a skipped user line also skips the replies of its turn."""
    if line.issues:
        if guard is not None and line.user:
            guard.user_skipped(where)
        yield from line.issues
    elif line.event is not None and guard is not None:
        dropped = guard.keep(line.event.role, where)
        if dropped:
            line.issues.append(dropped)
            yield dropped


def _jsonl_line(raw_line: bytes, lineno: int) -> _Line:
    if not raw_line.strip():
        return _Line()
    where = f"line {lineno}"
    try:
        raw = json.loads(raw_line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        return _Line(issues=[IngestIssue(where, None, f"invalid JSON: {msg}")])
    if not isinstance(raw, dict):
        return _Line(issues=[IngestIssue(where, None, "not a JSON object")])
    if len(raw) == 1 and EXPORT_HEADER_KEY in raw:  # what `memstrata export` wrote first
        return _Line()
    parts = tuple(raw.get(k) for k in ("tenant_id", "user_id", "session_id"))
    key = parts if all(isinstance(k, str) for k in parts) else None
    try:
        return _Line(event=TurnEvent.model_validate(raw), key=key)  # type: ignore[arg-type]
    except ValidationError as exc:
        return _Line(issues=_issues_from_validation(where, exc), key=key,  # type: ignore
                     user=raw.get("role") == "user")


def _issues_from_validation(where: str, exc: ValidationError) -> list[IngestIssue]:
    issues = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or None
        issues.append(IngestIssue(where, loc, err.get("msg", "invalid")))
    return issues
