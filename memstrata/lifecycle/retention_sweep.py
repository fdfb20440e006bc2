"""The retention sweep: delete what the policies expire, with a journal and a receipt.

A sweep computes each tenant's expired sessions and users
(:func:`~memstrata.lifecycle.retention.plan_tenant`) and deletes them through a
:class:`Deleter`: :class:`MemoryDeleter` calls the memory's own delete (every
store, the BM25 and vector indexes, raw turns, units and cached L1/L2) in the
process that owns the stores; in Kafka mode
:class:`~memstrata.lifecycle.retention_topic.ControlTopicDeleter` publishes
``delete_session``/``delete_user`` control events for the workers that own them.

Restarts. Before the first delete the sweep writes its journal
(``<state dir>/sweep-journal.jsonl``): a ``started`` record (its instant and
policies) and every planned deletion. Deletes are then flushed in batches, each
batch noted ``done`` after the stores flushed it. A sweep stopped part way (a
restart, a crash) leaves the journal behind; :meth:`Sweeper.finish_unfinished`
repeats every planned deletion not noted done (a delete is idempotent) and what
the same policies expire at the same instant now, then writes the receipt. The
receipt of each finished sweep is one line of ``<state dir>/receipts.jsonl``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from memstrata.lifecycle.retention import (
    Expired,
    RetentionPolicy,
    SeenLedger,
    TenantPlan,
    plan_tenant,
)
from memstrata.model import Scope
from memstrata.roles import DeleteReceipt
from memstrata.store.types import DocStore

__all__ = ["Deleter", "MemoryDeleter", "RetentionDeleteError", "SweepBusy", "SweepReceipt",
           "SweepStats", "SweepStopped", "Sweeper", "read_receipts"]

log = logging.getLogger("memstrata.retention")

JOURNAL = "sweep-journal.jsonl"
RECEIPTS = "receipts.jsonl"
SEEN = "seen.sqlite"
LOCK = "sweep.lock"


class RetentionDeleteError(RuntimeError):
    """A delete did not reach every store (the next sweep tries again)."""


class SweepBusy(RuntimeError):
    """Another process is sweeping the same state dir."""


class SweepStopped(RuntimeError):
    """The sweep was asked to stop; its journal stays, the next start finishes it."""


class Deleter(Protocol):
    """Where a sweep's deletes go: the stores themselves, or the control topic."""

    #: ``direct`` or ``control-topic`` (written in the receipt).
    mode: str

    def delete(self, scope: Scope, session_id: str | None) -> dict[str, int]:
        """Delete one session (or the whole user); per-store counts. Raises on failure."""
        ...

    def flush(self) -> dict[str, Any]:
        """Make the deletes so far final; what the receipt should say about it."""
        ...


class MemoryDeleter:
    """Deletes through ``Memory.delete`` in the process that owns the stores."""

    mode = "direct"

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    def delete(self, scope: Scope, session_id: str | None) -> dict[str, int]:
        receipt: DeleteReceipt = self.memory.delete(scope, session_id)
        if not receipt.complete:  # the core finishes a half-done delete on retry
            retry: DeleteReceipt = self.memory.delete(scope, session_id)
            for store, n in retry.removed.items():
                receipt.removed[store] = receipt.removed.get(store, 0) + n
            receipt.errors, receipt.complete = retry.errors, retry.complete
        if not receipt.complete:
            raise RetentionDeleteError("; ".join(f"{k}: {v}" for k, v in
                                                 sorted(receipt.errors.items())))
        return dict(receipt.removed)

    def flush(self) -> dict[str, Any]:
        self.memory.flush()
        return {}


class SweepStats:
    """What the sweeps of this process did, for the metrics (read at scrape time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sessions_deleted: dict[str, int] = {}
        self.users_deleted: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.sweeps: dict[str, int] = {}
        self.last_sweep: dict[str, float] = {}
        self.last_duration_s: float | None = None

    def deleted(self, tenant: str, item: Expired) -> None:
        with self._lock:
            self.sessions_deleted[tenant] = self.sessions_deleted.get(tenant, 0) + len(
                item.sessions)
            if item.session_id is None:
                self.users_deleted[tenant] = self.users_deleted.get(tenant, 0) + 1

    def failed(self, tenant: str) -> None:
        with self._lock:
            self.errors[tenant] = self.errors.get(tenant, 0) + 1

    def finished(self, receipt: "SweepReceipt") -> None:
        with self._lock:
            outcome = "errors" if any(t.errors for t in receipt.tenants.values()) else "ok"
            self.sweeps[outcome] = self.sweeps.get(outcome, 0) + 1
            for tenant in receipt.tenants:
                self.last_sweep[tenant] = receipt.finished_at.timestamp()
            self.last_duration_s = receipt.seconds

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {k: (dict(v) if isinstance(v, dict) else v) for k, v in vars(self).items()
                    if not k.startswith("_")}


@dataclass
class TenantReceipt:
    """One tenant's part of a sweep's receipt."""

    policy: RetentionPolicy
    users_checked: int = 0
    sessions_checked: int = 0
    undated: int = 0
    sessions_deleted: int = 0
    users_deleted: int = 0
    #: Per store, what the deletes removed (``direct``), or events published (Kafka).
    removed: dict[str, int] = field(default_factory=dict)
    deleted: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def add(self, item: Expired, removed: Mapping[str, int]) -> None:
        self.sessions_deleted += len(item.sessions)
        self.users_deleted += item.session_id is None
        for store, n in removed.items():
            self.removed[store] = self.removed.get(store, 0) + n
        self.deleted.append({**item.to_json(), "removed": dict(removed)})

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy.model_dump(exclude_none=True),
                "users_checked": self.users_checked, "sessions_checked": self.sessions_checked,
                "undated": self.undated, "sessions_deleted": self.sessions_deleted,
                "users_deleted": self.users_deleted, "removed": self.removed,
                "deleted": self.deleted, "errors": self.errors}


@dataclass
class SweepReceipt:
    """What one sweep deleted, per tenant and per store (a line of ``receipts.jsonl``)."""

    sweep_id: str
    mode: str
    now: datetime
    started_at: datetime
    finished_at: datetime
    resumed: bool = False
    tenants: dict[str, TenantReceipt] = field(default_factory=dict)
    #: What the deleter said at each flush (Kafka mode: whether the workers applied it).
    flushes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def sessions_deleted(self) -> int:
        return sum(t.sessions_deleted for t in self.tenants.values())

    @property
    def complete(self) -> bool:
        return not any(t.errors for t in self.tenants.values())

    def to_json(self) -> dict[str, Any]:
        return {"sweep_id": self.sweep_id, "mode": self.mode, "now": self.now.isoformat(),
                "started_at": self.started_at.isoformat(),
                "finished_at": self.finished_at.isoformat(), "seconds": round(self.seconds, 3),
                "resumed": self.resumed, "complete": self.complete,
                "sessions_deleted": self.sessions_deleted,
                "tenants": {t: r.to_json() for t, r in sorted(self.tenants.items())},
                "flushes": self.flushes}


def _append_private(path: Path, lines: Iterable[str]) -> None:
    """Append lines and fsync them (the file is created readable by its owner only)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, "".join(line + "\n" for line in lines).encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` survive a power loss."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Parsed JSONL records; a torn last line (a crash mid-write) is skipped."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def read_receipts(state_dir: Path) -> list[dict[str, Any]]:
    """Every receipt written under ``state_dir``, oldest first."""
    return list(_read_lines(state_dir / RECEIPTS))


@dataclass
class _Unfinished:
    started: dict[str, Any]
    planned: list[Expired]
    done: dict[tuple[str, str, str], dict[str, Any]]


class _Journal:
    """The running sweep's journal, and the receipts file."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / JOURNAL
        self.receipts = state_dir / RECEIPTS

    def start(self, started: dict[str, Any], planned: Sequence[Expired]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.unlink(missing_ok=True)
        _append_private(tmp, [json.dumps({"kind": "started", **started}),
                              *(json.dumps({"kind": "planned", **e.to_json()}) for e in planned)])
        os.replace(tmp, self.path)
        _sync_dir(self.path.parent)

    def done(self, items: Sequence[tuple[Expired, Mapping[str, int]]]) -> None:
        _append_private(self.path, [json.dumps({"kind": "done", **e.to_json(),
                                                "removed": dict(r)}) for e, r in items])

    def unfinished(self) -> _Unfinished | None:
        started: dict[str, Any] | None = None
        planned: list[Expired] = []
        done: dict[tuple[str, str, str], dict[str, Any]] = {}
        for rec in _read_lines(self.path):
            kind = rec.pop("kind", None)
            if kind == "started":
                started = rec
            elif kind == "planned":
                planned.append(Expired.from_json(rec))
            elif kind == "done":
                done[Expired.from_json(rec).key] = rec
        if started is None:
            return None
        if any(r.get("sweep_id") == started.get("sweep_id") for r in read_receipts(
                self.receipts.parent)):  # the receipt was written, the journal not yet removed
            self.path.unlink(missing_ok=True)
            return None
        return _Unfinished(started, planned, done)

    def finish(self, receipt: SweepReceipt) -> None:
        _append_private(self.receipts, [json.dumps(receipt.to_json())])
        self.path.unlink(missing_ok=True)
        _sync_dir(self.path.parent)


def _now() -> datetime:
    return datetime.now(UTC)


class Sweeper:
    """Plans and runs retention sweeps over one doc store, deleting through ``deleter``.

    ``state_dir`` holds the journal, the receipts and the ledger of undated sessions
    (``<data dir>/retention``). ``stop`` set: the sweep ends after the delete in hand
    (:class:`SweepStopped`); its journal stays for the next start.
    """

    def __init__(self, docs: DocStore, deleter: Deleter | None, state_dir: Path, *,
                 flush_every: int = 200, stats: SweepStats | None = None,
                 clock: Callable[[], datetime] = _now) -> None:
        self.docs = docs
        self.deleter = deleter
        self.state_dir = state_dir
        self.flush_every = max(1, flush_every)
        self.stats = stats if stats is not None else SweepStats()
        self.clock = clock
        self.stop = threading.Event()
        self._journal = _Journal(state_dir)

    # -- planning (reads only) ------------------------------------------------
    def plan(self, policies: Mapping[str, RetentionPolicy], tenant: str | None = None, *,
             now: datetime | None = None, record: bool = False) -> list[TenantPlan]:
        """What ``policies`` expire now; a dry run (``record=False``) writes nothing."""
        now = now or self.clock()
        if record:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        seen = SeenLedger(self.state_dir / SEEN, read_only=not record)
        try:
            return [plan_tenant(self.docs, t, p, now, seen)
                    for t, p in sorted(_selected(policies, tenant).items())]
        finally:
            seen.close()

    def has_unfinished(self) -> bool:
        return self._journal.path.is_file()

    # -- sweeping -------------------------------------------------------------
    def sweep(self, policies: Mapping[str, RetentionPolicy],
              tenant: str | None = None) -> SweepReceipt:
        """Finish an unfinished sweep if there is one, then sweep ``policies`` now."""
        with self._locked():
            self._resume()
            now = began = self.clock()
            selected = _selected(policies, tenant)
            plans = self.plan(selected, now=now, record=True)
            sweep_id = f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
            started = {"sweep_id": sweep_id, "now": now.isoformat(), "mode": self._mode(),
                       "started_at": began.isoformat(),
                       "policies": {t: p.model_dump(exclude_none=True)
                                    for t, p in selected.items()},
                       "checked": {p.tenant: [p.users, p.sessions, p.undated] for p in plans}}
            items = [e for p in plans for e in p.expired]
            self._journal.start(started, items)
            return self._run(started, items, {}, resumed=False)

    def finish_unfinished(self) -> SweepReceipt | None:
        """Finish the sweep a restart interrupted (None when there is none)."""
        with self._locked():
            return self._resume()

    def _resume(self) -> SweepReceipt | None:
        left = self._journal.unfinished()
        if left is None:
            return None
        started = left.started
        policies = {t: RetentionPolicy.model_validate(p)
                    for t, p in started.get("policies", {}).items()}
        now = datetime.fromisoformat(started["now"])
        log.info("finishing the retention sweep %s a restart interrupted (%d of %d deletes "
                 "noted done)", started.get("sweep_id"), len(left.done), len(left.planned))
        items = {e.key: e for e in left.planned if e.key not in left.done}
        for plan in self.plan(policies, now=now, record=True):
            for e in plan.expired:  # what the same policies expire at the same instant now
                if e.key not in left.done:
                    items.setdefault(e.key, e)
        return self._run(started, list(items.values()), left.done, resumed=True)

    def _mode(self) -> str:
        return self.deleter.mode if self.deleter is not None else "none"

    def _run(self, started: dict[str, Any], items: list[Expired],
             done: Mapping[tuple[str, str, str], dict[str, Any]], *,
             resumed: bool) -> SweepReceipt:
        if self.deleter is None:
            raise RuntimeError("this sweeper has no deleter (a dry run only)")
        policies = {t: RetentionPolicy.model_validate(p)
                    for t, p in started.get("policies", {}).items()}
        receipt = SweepReceipt(started["sweep_id"], self._mode(),
                               datetime.fromisoformat(started["now"]),
                               datetime.fromisoformat(started["started_at"]), self.clock(),
                               resumed=resumed)
        for t, policy in policies.items():
            tr = receipt.tenants[t] = TenantReceipt(policy)
            tr.users_checked, tr.sessions_checked, tr.undated = started.get(
                "checked", {}).get(t, [0, 0, 0])
        for rec in done.values():  # deleted before the restart
            item = Expired.from_json(rec)
            receipt.tenants[item.scope.tenant_id].add(item, rec.get("removed", {}))
        # A whole user supersedes any of their sessions in the same sweep.
        users = {(e.scope.tenant_id, e.scope.user_id) for e in items if e.session_id is None}
        todo = [e for e in items if e.session_id is None
                or (e.scope.tenant_id, e.scope.user_id) not in users]
        batch: list[tuple[Expired, dict[str, int]]] = []
        for item in todo:
            if self.stop.is_set():
                self._settle(batch, receipt)
                raise SweepStopped(f"retention sweep {receipt.sweep_id} stopped; the next "
                                   f"start finishes it")
            try:
                batch.append((item, self.deleter.delete(item.scope, item.session_id)))
            except Exception as exc:  # noqa: BLE001 - noted; the next sweep tries again
                log.warning("retention: deleting %s %s failed: %s", item.scope,
                            item.session_id or "(user)", exc)
                receipt.tenants[item.scope.tenant_id].errors.append(
                    {**item.to_json(), "error": f"{type(exc).__name__}: {exc}"})
                self.stats.failed(item.scope.tenant_id)
            if len(batch) >= self.flush_every:
                self._settle(batch, receipt)
        self._settle(batch, receipt)
        receipt.finished_at = self.clock()
        self._journal.finish(receipt)
        self.stats.finished(receipt)
        log.info("retention sweep %s: %d sessions deleted (%d users) in %.1f s%s",
                 receipt.sweep_id, receipt.sessions_deleted,
                 sum(t.users_deleted for t in receipt.tenants.values()), receipt.seconds,
                 "" if receipt.complete else "; some deletes failed (see the receipt)")
        return receipt

    def _settle(self, batch: list[tuple[Expired, dict[str, int]]],
                receipt: SweepReceipt) -> None:
        """Flush the stores, then note the batch done (journal, receipt, ledger, metrics)."""
        if not batch:
            return
        assert self.deleter is not None
        said = self.deleter.flush()
        if said:
            receipt.flushes.append(said)
        self._journal.done(batch)
        seen = SeenLedger(self.state_dir / SEEN)
        try:
            for item, removed in batch:
                receipt.tenants[item.scope.tenant_id].add(item, removed)
                seen.forget(item.scope, item.session_id)
                self.stats.deleted(item.scope.tenant_id, item)
        finally:
            seen.close()
        batch.clear()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One sweep at a time per state dir, across processes."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.state_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                raise SweepBusy(f"a retention sweep is already running over "
                                f"{self.state_dir} (pid {holder})") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            started = time.monotonic()
            try:
                yield
            finally:
                log.debug("retention sweep lock held %.1f s", time.monotonic() - started)
        finally:
            os.close(fd)  # releases the lock


def _selected(policies: Mapping[str, RetentionPolicy],
              tenant: str | None) -> dict[str, RetentionPolicy]:
    """The policies to apply: one tenant's, or all; a keep-forever policy is skipped."""
    return {t: p for t, p in policies.items()
            if (tenant is None or t == tenant) and not p.keeps_forever}
