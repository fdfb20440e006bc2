"""Verify a data dir: is the SQLite file sound, and do the stores agree with each other?

The stores are written one after another (raw turns and units in the doc
store, then BM25, then vectors; the session's digest last), so a crash, a
full disk or a damaged file can leave them out of step without any error at
read time: a session that is listed but never found by search, or search hits
whose units are gone. :func:`check_stores` finds that per session; the
``memstrata check`` command and ``memstrata serve`` (its cheap part, on start)
share it, and :func:`repair_sessions` rebuilds what it found from the raw
turns, which are the truth.

Every finding names where it is (a file, or a tenant, user and session) and
what to do about it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memstrata.model import Scope, Session, turns_digest
from memstrata.store.types import DocStore, LexicalStore, VectorStore

__all__ = ["CheckReport", "Finding", "check_memory", "check_stores", "check_totals",
           "repair_sessions", "sqlite_integrity"]

Severity = Literal["error", "warning"]

#: Doc-store records of the index itself (the fingerprint) live under this tenant.
_META_TENANT = "#memstrata"
_FINGERPRINT_LAYER = ("#index", "fingerprint", "1")

REPAIR_HINT = "run `memstrata check --repair` (rebuilds the session from its raw turns)"


@dataclass(frozen=True)
class Finding:
    """One problem: how bad, what kind, where, what was seen and what to do."""

    severity: Severity
    #: ``integrity``, ``totals``, ``counts``, ``session-index``, ``digest``, ``unfinished``,
    #: ``settings``.
    kind: str
    #: A file path, or ``tenant=... user=... session=...``.
    where: str
    detail: str
    fix: str
    scope: Scope | None = None
    session_id: str | None = None

    def line(self) -> str:
        return f"{self.severity}: {self.where}: {self.detail}; fix: {self.fix}"


@dataclass
class CheckReport:
    """What a check looked at and what it found (``ok``: no error)."""

    data_dir: Path | None = None
    #: The checks that ran, in order (``sqlite quick_check``, ``totals``, ...).
    checked: list[str] = field(default_factory=list)
    #: Checks that could not run, with the reason.
    skipped: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    sessions: int = 0
    #: Whole-store counts: ``units`` (doc store), ``vectors``, ``lexical``.
    totals: dict[str, int] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def sessions_to_repair(self) -> list[tuple[Scope, str]]:
        """Sessions a rebuild from raw turns fixes (all but settings drift)."""
        seen: dict[tuple[Scope, str], None] = {}
        for f in self.findings:
            if f.scope is not None and f.session_id is not None and f.kind != "settings":
                seen[(f.scope, f.session_id)] = None
        return list(seen)


def where(scope: Scope, session_id: str) -> str:
    return f"tenant={scope.tenant_id} user={scope.user_id} session={session_id}"


# -- SQLite -------------------------------------------------------------------

def sqlite_integrity(path: Path, *, quick: bool = False, max_errors: int = 20) -> list[str]:
    """SQLite's own verdict on ``path`` (``PRAGMA quick_check`` or ``integrity_check``).

    Opened read-only, so a damaged file is never written to. An empty list
    means sound; otherwise SQLite's messages (or the error opening the file).
    """
    pragma = "quick_check" if quick else "integrity_check"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        return [f"cannot open: {exc}"]
    try:
        rows = conn.execute(f"PRAGMA {pragma}({int(max_errors)})").fetchall()
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    finally:
        conn.close()
    messages = [str(r[0]) for r in rows]
    return [] if messages == ["ok"] else messages


def _sqlite_findings(path: Path, quick: bool) -> list[Finding]:
    problems = sqlite_integrity(path, quick=quick)
    if not problems:
        return []
    shown = "; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)" if len(problems) > 5
                                        else "")
    return [Finding("error", "integrity", str(path), f"SQLite reports damage: {shown}",
                    "stop every process using this data dir, restore the file from a backup, "
                    "or move the data dir aside and run `memstrata ingest` again on your "
                    "source files (the doc store holds the raw turns: they cannot be rebuilt "
                    "from the other stores)")]


# -- counts -----------------------------------------------------------------------

def check_totals(docs: DocStore, vectors: VectorStore, lexical: LexicalStore,
                 report: CheckReport) -> None:
    """Whole-store counts: every L0 unit has one vector and one BM25 document."""
    units = int(docs.stats(None)["units"])
    report.totals = {"units": units, "vectors": vectors.count(None),
                     "lexical": lexical.count(None)}
    report.checked.append("totals")
    if len(set(report.totals.values())) > 1:
        t = report.totals
        report.findings.append(Finding(
            "error", "totals", "all sessions",
            f"L0 units {t['units']}, vectors {t['vectors']}, BM25 documents {t['lexical']} "
            "(they must be equal)",
            "`memstrata check` names the sessions concerned; `memstrata check --repair` "
            "rebuilds them"))


def _stored_fingerprint_key(docs: DocStore) -> str | None:
    from memstrata.fingerprint import IndexFingerprint

    meta_scope = Scope.model_construct(tenant_id=_META_TENANT, user_id="#index")
    stored = docs.get_layer(meta_scope, *_FINGERPRINT_LAYER)
    if not stored:
        return None
    try:
        return IndexFingerprint(**stored).key
    except TypeError:
        return None


def check_stores(docs: DocStore, vectors: VectorStore, lexical: LexicalStore,
                 session_lexical: LexicalStore | None = None, *,
                 report: CheckReport | None = None,
                 progress: Callable[[int, int], None] | None = None) -> CheckReport:
    """Per session: the L0 units agree with vectors and BM25, and the digest with the turns.

    The digest (fingerprint key, then a hash of the raw turns) is written
    last, once every store has the session's records: a session without one
    was interrupted part way; one whose hash differs from its turns holds
    turns its L0 was not built from.
    """
    from memstrata.memory import HELD_DIGEST

    report = report or CheckReport()
    report = _totals_once(docs, vectors, lexical, report)
    try:
        tallies = [t for t in docs.session_tallies() if not t.scope.tenant_id.startswith("#")]
    except NotImplementedError as exc:
        report.skipped.append(f"per-session checks: {exc}")
        return report
    fp_key = _stored_fingerprint_key(docs)
    report.sessions = len(tallies)
    report.checked.append("per-session counts and digests")
    per_session: dict[str, VectorStore | LexicalStore] = {"vectors": vectors,
                                                           "BM25 documents": lexical}
    unsupported: set[str] = set()
    for n, tally in enumerate(tallies, 1):
        scope, sid = tally.scope, tally.session_id
        here = where(scope, sid)

        def add(kind: str, detail: str, severity: Severity = "error",
                fix: str = REPAIR_HINT) -> None:
            report.findings.append(Finding(severity, kind, here, detail, fix, scope, sid))

        counts = {"L0 units": tally.units}
        for label, store in per_session.items():
            if label in unsupported:
                continue
            try:
                counts[label] = store.count_session(scope, sid)
            except NotImplementedError as exc:
                unsupported.add(label)
                report.skipped.append(f"{label} per session: {exc}")
        if len(set(counts.values())) > 1:
            add("counts", ", ".join(f"{k} {v}" for k, v in counts.items())
                + " (they must be equal)")
        if session_lexical is not None and tally.turns and "session" not in unsupported:
            try:
                if session_lexical.count_session(scope, sid) != 1:
                    # A warning: data dirs written before that index existed lack it.
                    add("session-index", "its whole-session BM25 document is missing "
                        "(search ranks it by its L0 units alone)", "warning")
            except NotImplementedError as exc:
                unsupported.add("session")
                report.skipped.append(f"whole-session BM25 per session: {exc}")
        if tally.digest is None:
            add("unfinished", f"written but never finished ({tally.turns} raw turns, "
                f"{tally.units} L0 units, no digest): an ingest or append stopped part way")
        elif tally.digest == HELD_DIGEST:
            add("held", "its last window is stored as raw turns but not indexed yet (held "
                "by a stream worker that was behind)", "warning",
                "the session's next message, its close or an idle close builds it")
        else:
            key, _, content = tally.digest.rpartition(":")
            actual = turns_digest(docs.get_turns(scope, sid))
            if content != actual:
                add("digest", f"its {tally.turns} raw turns do not match the digest written "
                    "with its L0 units (turns changed or lost after indexing)")
            elif fp_key is not None and key != fp_key:
                add("settings", "indexed with earlier builder or window settings", "warning",
                    "`memstrata ingest` of the same source rebuilds it")
        if progress is not None:
            progress(n, len(tallies))
    return report


def _totals_once(docs: DocStore, vectors: VectorStore, lexical: LexicalStore,
                 report: CheckReport) -> CheckReport:
    if "totals" not in report.checked:
        check_totals(docs, vectors, lexical, report)
    return report


def _sqlite_path(docs: DocStore) -> Path | None:
    path = getattr(docs, "path", None)
    return Path(path) if path is not None and getattr(docs, "name", "") == "sqlite" else None


def check_memory(memory: Any, *, deep: bool = True,
                 progress: Callable[[int, int], None] | None = None) -> CheckReport:
    """Check an open :class:`~memstrata.memory.Memory`.

    ``deep=False`` is the cheap part ``memstrata serve`` runs on start: SQLite's
    ``quick_check`` and the whole-store totals. ``deep=True`` adds SQLite's full
    ``integrity_check`` and every per-session check.
    """
    report = CheckReport(data_dir=Path(memory.settings.data_dir))
    path = _sqlite_path(memory.docs)
    if path is not None:
        report.checked.append("sqlite " + ("integrity_check" if deep else "quick_check"))
        report.findings += _sqlite_findings(path, quick=not deep)
        if report.errors:
            return report  # the other checks read the same damaged file
    check_totals(memory.docs, memory.vectors, memory.lexical, report)
    if deep:
        check_stores(memory.docs, memory.vectors, memory.lexical, memory.session_lexical,
                     report=report, progress=progress)
    return report


def check_sqlite_file(path: Path, *, deep: bool = True) -> CheckReport:
    """Only the SQLite part (needs no lock: usable while another process holds the data dir)."""
    report = CheckReport(data_dir=path.parent)
    report.checked.append("sqlite " + ("integrity_check" if deep else "quick_check"))
    report.findings += _sqlite_findings(path, quick=not deep)
    return report


# -- repair -------------------------------------------------------------------------

def repair_sessions(memory: Any, sessions: Sequence[tuple[Scope, str]],
                    progress: Callable[[Scope, str], None] | None = None) -> int:
    """Rebuild each session from its raw turns (L3, the truth): delete, then ingest them.

    The session's L0 units, vectors and BM25 documents are rebuilt and its
    digest written last, as an ingest does; cached L1/L2 are rebuilt on the next
    read. Returns the number of sessions rebuilt.
    """
    done = 0
    for scope, sid in sessions:
        meta = memory.docs.get_session(scope, sid)
        turns = memory.docs.get_turns(scope, sid)
        if meta is None:
            continue
        receipt = memory.delete(scope, sid)
        if not receipt.complete:
            raise RuntimeError(f"{where(scope, sid)}: delete before rebuild failed: "
                               + ", ".join(f"{k}: {v}" for k, v in receipt.errors.items()))
        if turns:
            memory.ingest([Session(meta=meta, turns=turns)])
        done += 1
        if progress is not None:
            progress(scope, sid)
    memory.flush()
    return done
