"""Readers for the input formats ``memstrata ingest`` accepts.

* LoCoMo JSON: a list of conversations; one user per conversation
  (``sample_id``), ``speaker_a`` plays the user role, ``speaker_b`` the
  assistant role, and each message keeps its ``dia_id``.
* LongMemEval JSON: a list of questions; one user per question
  (``question_id``) holding its dated haystack sessions.
* JSONL: one :class:`~memstrata.model.TurnEvent` per line.

Bad records never stop a file: each becomes an :class:`IngestIssue` naming the
line (or record) and field, and the rest is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from memstrata.layers.windowing import group_turns
from memstrata.model import (
    ID_PATTERN,
    MAX_CONTENT_CHARS,
    Message,
    Role,
    Scope,
    Session,
    SessionMeta,
    TurnEvent,
)
from memstrata.text.dates import parse_datetime

Format = Literal["locomo", "longmemeval", "jsonl"]
FORMATS: tuple[str, ...] = ("auto", "locomo", "longmemeval", "jsonl")
_ID_OK = re.compile(ID_PATTERN)


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
    data = _load_json(path)
    first = data[0] if isinstance(data, list) and data else {}
    if isinstance(first, dict) and "haystack_sessions" in first:
        return "longmemeval"
    if isinstance(first, dict) and "conversation" in first:
        return "locomo"
    raise FormatError(f"{path}: cannot tell the format; pass --format locomo|longmemeval|jsonl")


def read_file(path: Path, fmt: str = "auto", tenant_id: str = "default") -> Parsed:
    """Read a whole file into sessions, collecting the issues."""
    if not path.is_file():
        raise FormatError(f"{path}: no such file")
    if fmt not in FORMATS:
        raise FormatError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if not _ID_OK.match(tenant_id) or len(tenant_id) > 128:
        raise FormatError(f"tenant id {tenant_id!r} is not a valid id ({ID_PATTERN}, <= 128 chars)")
    kind: Format = detect_format(path) if fmt == "auto" else fmt  # type: ignore[assignment]
    if kind == "jsonl":
        return read_jsonl(path)
    data = _load_json(path)
    if not isinstance(data, list):
        raise FormatError(f"{path}: expected a JSON list of {kind} records")
    reader = read_locomo if kind == "locomo" else read_longmemeval
    out = Parsed(format=kind)
    for item in reader(data, tenant_id):
        if isinstance(item, IngestIssue):
            out.issues.append(item)
        else:
            out.sessions.append(item)
    return out


def _load_json(path: Path) -> Any:
    try:
        with path.open("r", encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None


def _check_id(value: Any, where: str, name: str) -> str | IngestIssue:
    if not isinstance(value, str) or not value:
        return IngestIssue(where, name, "missing or not a string")
    if len(value) > 128 or not _ID_OK.match(value):
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


_SESSION_KEY = re.compile(r"^session_(\d+)$")


def read_locomo(data: list[Any], tenant_id: str) -> Iterator[Session | IngestIssue]:
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
            for i, msg in enumerate(turns_raw):
                mwhere = f"{swhere}[{i}]"
                if not isinstance(msg, dict):
                    yield IngestIssue(mwhere, None, "message is not an object")
                    continue
                text = _check_content(msg.get("text"), mwhere, "text")
                if isinstance(text, IngestIssue):
                    yield text
                    continue
                caption = msg.get("blip_caption")
                if isinstance(caption, str) and caption.strip():
                    text = f"{text} [shares a photo of {caption.strip()}]"
                speaker = msg.get("speaker")
                if not isinstance(speaker, str) or not speaker:
                    yield IngestIssue(mwhere, "speaker", "missing or not a string")
                    continue
                role: Role = "user" if speaker == speaker_a else "assistant"
                dia = msg.get("dia_id")
                messages.append(Message(role=role, content=text[:MAX_CONTENT_CHARS],
                                        speaker=speaker,
                                        source_id=dia if isinstance(dia, str) else None))
            if not messages:
                continue
            meta = SessionMeta(scope=scope, session_id=f"session_{num}", session_date=date,
                               labels={"source": "locomo", "sample_id": user})
            yield Session(meta=meta, turns=group_turns(messages))


def read_longmemeval(data: list[Any], tenant_id: str) -> Iterator[Session | IngestIssue]:
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
            for i, msg in enumerate(msgs):
                mwhere = f"{swhere}[{i}]"
                role = msg.get("role") if isinstance(msg, dict) else None
                if role not in ("user", "assistant"):
                    yield IngestIssue(mwhere, "role", f"must be 'user' or 'assistant', got {role!r}")
                    continue
                text = _check_content(msg.get("content"), mwhere, "content")
                if isinstance(text, IngestIssue):
                    yield text
                    continue
                messages.append(Message(role=role, content=text, source_id=f"{sid_ok}:{i}"))
            if messages:
                meta = SessionMeta(scope=scope, session_id=sid_ok, session_date=date,
                                   labels={"source": "longmemeval", "question_id": user})
                yield Session(meta=meta, turns=group_turns(messages))


def read_jsonl(path: Path) -> Parsed:
    """JSONL turn events grouped into sessions in file order."""
    out = Parsed(format="jsonl")
    groups: dict[tuple[str, str, str], tuple[SessionMeta, list[Message]]] = {}
    with path.open("r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"line {lineno}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                out.issues.append(IngestIssue(where, None, f"invalid JSON: {exc.msg}"))
                continue
            if not isinstance(raw, dict):
                out.issues.append(IngestIssue(where, None, "not a JSON object"))
                continue
            try:
                ev = TurnEvent.model_validate(raw)
            except ValidationError as exc:
                out.issues.extend(_issues_from_validation(where, exc))
                continue
            key = (ev.tenant_id, ev.user_id, ev.session_id)
            if key not in groups:
                meta = SessionMeta(scope=ev.scope, session_id=ev.session_id,
                                   session_date=ev.session_date, labels={"source": "jsonl"})
                groups[key] = (meta, [])
            groups[key][1].append(ev.message())
    out.sessions = [Session(meta=m, turns=group_turns(msgs)) for m, msgs in groups.values()]
    return out


def _issues_from_validation(where: str, exc: ValidationError) -> list[IngestIssue]:
    issues = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or None
        issues.append(IngestIssue(where, loc, err.get("msg", "invalid")))
    return issues
