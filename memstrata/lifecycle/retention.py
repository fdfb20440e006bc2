"""Retention: which sessions and users a tenant's policy says are expired.

A tenant's policy lives in the keys/tenants file beside its limits::

    {"tenants": {"acme": {"retention": {"session_max_age_days": 365,
                                        "user_inactive_days": 730}}}}

With no policy (the default) a tenant's data is kept forever. A session
expires when its date is older than ``session_max_age_days``; a user expires,
whole, when their newest session is older than ``user_inactive_days``.

A session's date is its ``session_date``. A session stored without one has no
date the stores know, so the sweep dates it itself: the :class:`SeenLedger`
notes when it first saw the session with its current content digest, and a
new digest (the session was written to) starts the clock again. An undated
session therefore expires ``session_max_age_days`` after its last write was
first seen by a sweep, never earlier than its last write.

This module decides; :mod:`memstrata.lifecycle.retention_sweep` deletes, through
the memory's own delete (every store, index and cached layer) or, in Kafka mode,
through the control topic (:mod:`memstrata.lifecycle.retention_topic`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from memstrata.model import Identifier, Scope, SessionMeta

if TYPE_CHECKING:  # annotations only: the query service's keys file reads the policy model
    from memstrata.store.types import DocStore

__all__ = ["MAX_DAYS", "Expired", "RetentionPolicy", "RetentionPolicyError", "SeenLedger",
           "TenantPlan", "plan_tenant", "read_policies"]

#: The longest period a policy may name (a hundred years): a larger number is a typo.
MAX_DAYS = 36_500
#: Users read from the doc store per page.
USER_PAGE = 1000


class RetentionPolicy(BaseModel):
    """How long one tenant's data is kept; a field left out never expires anything."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: A session older than this many days (by its date) is deleted.
    session_max_age_days: int | None = Field(None, ge=1, le=MAX_DAYS)
    #: A user whose newest session is older than this many days is deleted whole.
    user_inactive_days: int | None = Field(None, ge=1, le=MAX_DAYS)

    @property
    def keeps_forever(self) -> bool:
        return self.session_max_age_days is None and self.user_inactive_days is None

    def session_cutoff(self, now: datetime) -> datetime | None:
        """Sessions dated before this instant are expired (None: none are)."""
        days = self.session_max_age_days
        return None if days is None else now - timedelta(days=days)

    def user_cutoff(self, now: datetime) -> datetime | None:
        """Users whose newest session is dated before this instant are expired."""
        days = self.user_inactive_days
        return None if days is None else now - timedelta(days=days)


class RetentionPolicyError(ValueError):
    """The tenants file's retention policies cannot be read; the message names the field."""


_TENANT = TypeAdapter(Identifier)


def read_policies(path: Path) -> dict[str, RetentionPolicy]:
    """Every tenant's retention policy in the keys/tenants file (absent file: none).

    Only ``tenants.<tenant>.retention`` is read here; the rest of the file is the
    query service's (``query_service.keys``), which validates it in full.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise RetentionPolicyError(f"tenants file {path}: cannot read it ({exc.strerror})") \
            from None
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise RetentionPolicyError(f"tenants file {path}: not JSON ({exc})") from None
    tenants = data.get("tenants", {}) if isinstance(data, dict) else None
    if not isinstance(tenants, dict):
        raise RetentionPolicyError(f"tenants file {path}: tenants: must be an object")
    out: dict[str, RetentionPolicy] = {}
    for tenant, entry in tenants.items():
        where = f"tenants.{tenant}.retention"
        if not isinstance(entry, dict) or entry.get("retention") is None:
            continue
        try:
            _TENANT.validate_python(tenant)
            out[tenant] = RetentionPolicy.model_validate(entry["retention"])
        except ValidationError as exc:
            raise RetentionPolicyError(f"tenants file {path}: {_problem(where, exc)}") from None
    return out


def _problem(where: str, exc: ValidationError) -> str:
    """The first problem by place and rule, without quoting the file's content."""
    e = exc.errors(include_url=False, include_input=False)[0]
    loc = ".".join(str(p) for p in e["loc"])
    return f"{where}{'.' + loc if loc else ''}: {e['msg']}"


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class SeenLedger:
    """When the sweep first saw each undated session with its current content digest.

    A small SQLite file of the sweep's own (``<data dir>/retention/seen.sqlite``):
    nothing on the write path changes. ``read_only`` (a dry run) records nothing:
    a session it has not seen counts as written now.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if read_only:
            if path.is_file():
                self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True,
                                             check_same_thread=False)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS seen (tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, "
            "session_id TEXT NOT NULL, digest TEXT, since REAL NOT NULL, "
            "PRIMARY KEY (tenant_id, user_id, session_id))")

    def since(self, scope: Scope, session_id: str, digest: str | None,
              now: datetime) -> datetime:
        """When the session was first seen holding ``digest`` (``now`` when it is new)."""
        if self._conn is None:
            return now
        key = (scope.tenant_id, scope.user_id, session_id)
        with self._lock:
            row = self._conn.execute(
                "SELECT digest, since FROM seen WHERE tenant_id=? AND user_id=? AND "
                "session_id=?", key).fetchone()
            if row is not None and row[0] == digest:
                return datetime.fromtimestamp(float(row[1]), UTC)
            if not self.read_only:
                self._conn.execute("INSERT OR REPLACE INTO seen VALUES (?, ?, ?, ?, ?)",
                                   (*key, digest, now.timestamp()))
        return now

    def forget(self, scope: Scope, session_id: str | None = None,
               keep: set[str] | None = None) -> None:
        """Drop one session's entry, or the user's (all of them, or all but ``keep``)."""
        if self._conn is None or self.read_only:
            return
        where, params = "tenant_id=? AND user_id=?", [scope.tenant_id, scope.user_id]
        if session_id is not None:
            where, params = where + " AND session_id=?", [*params, session_id]
        with self._lock:
            if keep is None:
                self._conn.execute(f"DELETE FROM seen WHERE {where}", params)
                return
            rows = self._conn.execute(f"SELECT session_id FROM seen WHERE {where}", params)
            for (sid,) in [r for r in rows if r[0] not in keep]:
                self._conn.execute(f"DELETE FROM seen WHERE {where} AND session_id=?",
                                   [*params, sid])

    def keep_users(self, tenant: str, users: set[str]) -> None:
        """Drop the entries of the tenant's users not in ``users`` (deleted since)."""
        if self._conn is None or self.read_only:
            return
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT user_id FROM seen WHERE tenant_id=?",
                                      (tenant,)).fetchall()
            for (user,) in rows:
                if user not in users:
                    self._conn.execute("DELETE FROM seen WHERE tenant_id=? AND user_id=?",
                                       (tenant, user))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


Reason = Literal["session_age", "user_inactive"]


@dataclass(frozen=True)
class Expired:
    """One thing a policy deletes: a session, or (``session_id`` None) a whole user."""

    scope: Scope
    session_id: str | None
    reason: Reason
    #: The session's date, or the user's newest (what the cutoff was compared with).
    last: datetime
    #: The sessions it removes (one, or every session of the user).
    sessions: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scope.tenant_id, self.scope.user_id, self.session_id or "")

    def to_json(self) -> dict[str, Any]:
        return {"tenant_id": self.scope.tenant_id, "user_id": self.scope.user_id,
                "session_id": self.session_id, "reason": self.reason,
                "last": self.last.isoformat(), "sessions": list(self.sessions)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Expired":
        return cls(Scope(tenant_id=d["tenant_id"], user_id=d["user_id"]), d.get("session_id"),
                   d["reason"], datetime.fromisoformat(d["last"]), tuple(d.get("sessions", ())))


@dataclass
class TenantPlan:
    """What one tenant's policy expires at ``now``, and what it looked at."""

    tenant: str
    policy: RetentionPolicy
    now: datetime
    expired: list[Expired] = field(default_factory=list)
    users: int = 0
    sessions: int = 0
    #: Sessions without a date of their own (dated by the :class:`SeenLedger`).
    undated: int = 0

    @property
    def sessions_expired(self) -> int:
        return sum(len(e.sessions) for e in self.expired)

    @property
    def users_expired(self) -> int:
        return sum(1 for e in self.expired if e.session_id is None)


def _dated(docs: "DocStore", metas: list[SessionMeta], seen: SeenLedger,
           now: datetime) -> list[tuple[SessionMeta, datetime, bool]]:
    """Each session with its date (its own, or when the ledger first saw its content)."""
    out = []
    for m in metas:
        if m.session_date is not None:
            out.append((m, _aware(m.session_date), False))
        else:
            digest = docs.session_digest(m.scope, m.session_id)
            out.append((m, seen.since(m.scope, m.session_id, digest, now), True))
    return out


def plan_tenant(docs: "DocStore", tenant: str, policy: RetentionPolicy, now: datetime,
                seen: SeenLedger) -> TenantPlan:
    """Walk the tenant's users (a page at a time) and list what ``policy`` expires at ``now``.

    Reads only; ``seen`` notes undated sessions it has not seen before (unless it is
    read-only). A user expired by inactivity is one entry (their sessions are not
    listed again); a session date in the future is never expired.
    """
    now = _aware(now)
    plan = TenantPlan(tenant, policy, now)
    if policy.keeps_forever:
        return plan
    s_cut, u_cut = policy.session_cutoff(now), policy.user_cutoff(now)
    present: set[str] = set()
    for user in docs.iter_users(tenant, page=USER_PAGE):
        scope = Scope(tenant_id=tenant, user_id=user)
        dated = _dated(docs, docs.list_sessions(scope), seen, now)
        if not dated:
            continue
        present.add(user)
        plan.users += 1
        plan.sessions += len(dated)
        plan.undated += sum(1 for *_, undated in dated if undated)
        seen.forget(scope, keep={m.session_id for m, _, undated in dated if undated})
        newest = max(when for _, when, _ in dated)
        if u_cut is not None and newest < u_cut:
            plan.expired.append(Expired(scope, None, "user_inactive", newest,
                                        tuple(m.session_id for m, _, _ in dated)))
            continue
        if s_cut is None:
            continue
        for m, when, _ in dated:
            if when < s_cut:
                plan.expired.append(Expired(scope, m.session_id, "session_age", when,
                                            (m.session_id,)))
    seen.keep_users(tenant, present)
    return plan
