"""Verify a data dir: is the SQLite file sound, and do the stores agree with each other?

The stores are written one after another (raw turns and units in the doc
store, then BM25, then vectors; the session's digest last), so a crash, a
full disk or a damaged file can leave them out of step without any error at
read time: a session that is listed but never found by search, or search hits
whose units are gone. :func:`check_stores` finds that per session; the
``memstrata check`` command and ``memstrata serve`` (its cheap part, on start)
share it, and :func:`repair_sessions` rebuilds what it found from the raw
turns, which are the truth.

The stores themselves are read too: every stored vector must still be
readable (a Qdrant Edge vector file that lost its tail opens without a word
and then fails, or silently drops, dense search), and every BM25 segment file
must match the checksum tantivy wrote with it. Damage there is a finding on
the whole store, which :mod:`memstrata.rebuild` fixes by moving it aside and
rebuilding it from the L0 units in the doc store.

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
from memstrata.roles import HostedMemory
from memstrata.store.types import DocStore, LexicalStore, StoreError, VectorStore

__all__ = ["CheckReport", "Finding", "check_index_files", "check_memory", "check_stores",
           "check_totals", "check_vector_store", "repair_sessions", "sqlite_integrity"]

Severity = Literal["error", "warning"]

#: Doc-store records of the index itself (the fingerprint) live under this tenant.
_META_TENANT = "#memstrata"
_FINGERPRINT_LAYER = ("#index", "fingerprint", "1")

REPAIR_HINT = "run `memstrata check --repair` (rebuilds the session from its raw turns)"

#: The stores a rebuild from the doc store fixes, by the name :mod:`memstrata.rebuild` uses.
STORE_LABELS = {"vectors": "vector store", "lexical": "BM25 index",
                "session-lexical": "whole-session BM25 index"}

#: The restore step for a damaged doc store: the raw turns live there and nowhere else.
RESTORE_STEP = ("stop every process using this data dir, restore the file from a backup, or "
                "move the data dir aside and run `memstrata ingest` again on your source files "
                "(the doc store holds the raw turns: they cannot be rebuilt from the other "
                "stores)")

#: Stored vectors compared with a fresh encoding of their L0 unit, and the least cosine kept.
COMPARE_SAMPLE, COMPARE_MIN_COSINE = 16, 0.98
#: Points read back with their vectors: in a full check, and in the cheap one (serve's start).
DECODE_DEEP, DECODE_QUICK = 10_000, 256


def rebuild_hint(store: str) -> str:
    source = ("the raw turns" if store == "session-lexical" else "the L0 units")
    return (f"run `memstrata check --repair` (moves the damaged {STORE_LABELS[store]} aside, "
            f"kept for inspection, and rebuilds it from {source} in the doc store)")


@dataclass(frozen=True)
class Finding:
    """One problem: how bad, what kind, where, what was seen and what to do."""

    severity: Severity
    #: ``integrity``, ``store`` (a whole vector store or BM25 index), ``totals``, ``counts``,
    #: ``session-index``, ``digest``, ``unfinished``, ``settings``.
    kind: str
    #: A file path, or ``tenant=... user=... session=...``.
    where: str
    detail: str
    fix: str
    scope: Scope | None = None
    session_id: str | None = None
    #: A whole store that a rebuild from the doc store fixes (a key of :data:`STORE_LABELS`).
    store: str | None = None

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

    def stores_to_rebuild(self) -> list[str]:
        """Whole stores found damaged (vectors, BM25), in the order they were found."""
        return list(dict.fromkeys(f.store for f in self.errors if f.store is not None))

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
                    RESTORE_STEP)]


# -- the stores' own files ------------------------------------------------------------

def _store_finding(store: str, where_: str, problems: Sequence[str]) -> Finding:
    shown = "; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)" if len(problems) > 5
                                        else "")
    return Finding("error", "store", where_, f"the {STORE_LABELS[store]} is damaged: {shown}",
                   rebuild_hint(store), store=store)


def index_dirs(settings: Any) -> dict[str, Path]:
    """The embedded BM25 index directories of ``settings`` (none unless tantivy)."""
    if getattr(settings, "lexical_backend", None) != "tantivy":
        return {}
    return {"lexical": Path(settings.lexical_dir),
            "session-lexical": Path(settings.session_lexical_dir)}


def check_index_files(settings: Any, report: CheckReport, *, checksum: bool = True) -> None:
    """Every tantivy segment file's footer and checksum (reads files only: needs no lock)."""
    dirs = index_dirs(settings)
    if not dirs or "BM25 index files" in report.checked:
        return
    from memstrata.store.tantivy_store import verify_index_files

    report.checked.append("BM25 index files")
    for store, path in dirs.items():
        problems = verify_index_files(path, checksum=checksum)
        if problems:
            report.findings.append(_store_finding(store, str(path), problems))


def check_vector_store(vectors: VectorStore, report: CheckReport, *,
                       decode: int | None = DECODE_QUICK) -> None:
    """Every stored vector readable, and ``decode`` of them read back and checked.

    Only stores with a ``verify`` hook (Qdrant Edge) are read; a server-backed
    store is the server's to keep sound.
    """
    verify = getattr(vectors, "verify", None)
    if verify is None or "vector store" in report.checked:
        return
    report.checked.append("vector store")
    problems = verify(decode=decode)
    if problems:
        report.findings.append(_store_finding("vectors", str(getattr(vectors, "path", "")),
                                              problems))


def compare_vector_sample(memory: HostedMemory, report: CheckReport, *,
                          sample: int = COMPARE_SAMPLE) -> None:
    """A sample of stored vectors against a fresh encoding of their L0 unit.

    Garbage written over a vector file can still decode as unit vectors; the
    encoder is deterministic, so a stored vector far from its unit's encoding
    is damage (the index fingerprint already guarantees the same encoder).
    """
    read = getattr(memory.vectors, "read_vectors", None)
    if read is None or any(f.store == "vectors" for f in report.errors):
        return
    from memstrata.retrieval.indexing import dense_text

    try:
        tallies = [t for t in memory.docs.session_tallies()
                   if t.units and not t.scope.tenant_id.startswith("#")]
    except NotImplementedError as exc:
        report.skipped.append(f"vector sample against fresh encodings: {exc}")
        return
    step = max(1, len(tallies) // sample)
    units = []
    for t in tallies[::step][:sample]:
        found = memory.docs.session_units(t.scope, t.session_id)
        if found:
            units.append(found[len(found) // 2])
    if not units:
        return
    report.checked.append("vector sample against fresh encodings")
    stored = read([u.id for u in units])
    fresh = memory.embedder.embed_documents([dense_text(u) for u in units])
    off = [f"{u.id} ({where(u.scope, u.session_id)})" for u, v in zip(units, fresh)
           if u.id in stored and float(stored[u.id] @ v) < COMPARE_MIN_COSINE]
    if off:
        path = str(getattr(memory.vectors, "path", ""))
        report.findings.append(_store_finding("vectors", path, [
            f"{len(off)} of {len(units)} sampled vectors differ from a fresh encoding of their "
            f"L0 unit: {', '.join(off[:3])}" + (" ..." if len(off) > 3 else "")]))


# -- counts -----------------------------------------------------------------------

def check_totals(docs: DocStore, vectors: VectorStore, lexical: LexicalStore,
                 report: CheckReport) -> None:
    """Whole-store counts: every L0 unit has one vector and one BM25 document."""
    check_vector_store(vectors, report)
    units = int(docs.stats(None)["units"])
    report.totals = {"units": units}
    for label, store, key in (("vectors", vectors, "vectors"), ("lexical", lexical, "lexical")):
        try:
            report.totals[key] = store.count(None)
        except StoreError as exc:
            report.findings.append(_store_finding(label, str(getattr(store, "path", store.name)),
                                                  [f"cannot count its records: {exc}"]))
    report.checked.append("totals")
    if len(report.totals) == 3 and len(set(report.totals.values())) > 1:
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
    # A store found damaged as a whole is rebuilt as a whole: counting it per session
    # would only repeat its damage once per session.
    unsupported: set[str] = {label for label, key in (("vectors", "vectors"),
                                                      ("BM25 documents", "lexical"),
                                                      ("session", "session-lexical"))
                             if key in report.stores_to_rebuild()}
    for n, tally in enumerate(tallies, 1):
        scope, sid = tally.scope, tally.session_id
        here = where(scope, sid)

        def add(kind: str, detail: str, severity: Severity = "error",
                fix: str = REPAIR_HINT) -> None:
            # called within this iteration only
            report.findings.append(Finding(severity, kind, here, detail, fix, scope, sid))  # noqa: B023

        counts = {"L0 units": tally.units}
        for label, store in per_session.items():
            if label in unsupported:
                continue
            try:
                counts[label] = store.count_session(scope, sid)
            except NotImplementedError as exc:
                unsupported.add(label)
                report.skipped.append(f"{label} per session: {exc}")
            except StoreError as exc:
                unsupported.add(label)
                key = "vectors" if label == "vectors" else "lexical"
                report.findings.append(_store_finding(
                    key, str(getattr(store, "path", store.name)),
                    [f"cannot count a session's records: {exc}"]))
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
            except StoreError as exc:
                unsupported.add("session")
                report.findings.append(_store_finding(
                    "session-lexical", str(getattr(session_lexical, "path", "")),
                    [f"cannot count a session's document: {exc}"]))
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


def check_memory(memory: HostedMemory, *, deep: bool = True,
                 progress: Callable[[int, int], None] | None = None,
                 report: CheckReport | None = None) -> CheckReport:
    """Check an open :class:`~memstrata.memory.Memory` (its stores, through
    :class:`~memstrata.roles.HostedMemory`).

    ``deep=False`` is the cheap part: SQLite's ``quick_check``, the BM25 segment
    footers and checksums, the vector store's readability with a small sample
    decoded, and the whole-store totals. ``deep=True`` runs SQLite's full
    ``integrity_check``, decodes more vectors, compares a sample with fresh
    encodings and adds every per-session check. Checks already in
    ``report.checked`` (run before the data dir was opened) are not repeated.
    """
    if report is None:
        report = CheckReport(data_dir=Path(memory.settings.data_dir))
    path = _sqlite_path(memory.docs)
    if path is not None and not any(c.startswith("sqlite ") for c in report.checked):
        report.checked.append("sqlite " + ("integrity_check" if deep else "quick_check"))
        report.findings += _sqlite_findings(path, quick=not deep)
    if any(f.kind == "integrity" for f in report.errors):
        return report  # the other checks read the same damaged file
    check_index_files(memory.settings, report)
    check_vector_store(memory.vectors, report, decode=DECODE_DEEP if deep else DECODE_QUICK)
    check_totals(memory.docs, memory.vectors, memory.lexical, report)
    if deep:
        compare_vector_sample(memory, report)
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

def repair_sessions(memory: HostedMemory, sessions: Sequence[tuple[Scope, str]],
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
