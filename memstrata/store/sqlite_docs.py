"""Embedded document store: one SQLite file in WAL mode.

Records are JSON blobs keyed by scope columns, so the schema does not chase
the pydantic models; only what is filtered or sorted on gets a column.
Writes go through one connection behind a lock (SQLite serialises writers
anyway); every reading thread gets its own connection, so in WAL mode reads
neither wait for each other nor for a write in progress. ``read_only`` opens
the file with ``mode=ro`` and no writer connection at all.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstrata.model import L0Unit, Message, Scope, SessionMeta, Turn
from memstrata.store._errors import guard
from memstrata.store.types import CachedLayer, DocStore, SessionTally, StoreError
from memstrata.unit_caches import UnitCache

BACKEND = "sqlite"
_CHUNK = 500  # ids per IN (...) clause, well under SQLite's variable limit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    session_date TEXT, date_key REAL, labels TEXT NOT NULL, digest TEXT,
    PRIMARY KEY (tenant_id, user_id, session_id)
);
CREATE TABLE IF NOT EXISTS turns (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL, messages TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, session_id, turn_index)
);
CREATE TABLE IF NOT EXISTS units (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL, data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS units_by_session ON units (tenant_id, user_id, session_id, turn_index);
CREATE TABLE IF NOT EXISTS layers (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    layer TEXT NOT NULL, builder TEXT NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, session_id, layer, builder)
);
CREATE TABLE IF NOT EXISTS profiles (
    tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, entity_id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, entity_id)
);
"""

_SESSION_TABLES = ("sessions", "turns", "units", "layers")


def date_key(value: datetime | None) -> float | None:
    """Sortable instant of a session date; naive dates are taken as UTC."""
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


#: Units a reader thread keeps between searches while the database is unchanged.
_KNOWN_UNITS = 50_000


#: Stored units parsed, by their JSON text (a delete drops its user's: memstrata.unit_caches).
_PARSED: UnitCache[str, None] = UnitCache()


def _unit(data: str) -> L0Unit:
    """A stored unit parsed once per distinct JSON text.

    Every search parses its ~80 candidate units, mostly the same ones again;
    keyed by the stored text itself, the cache can never serve a stale unit.
    Callers share the returned object and treat it as read-only, like every
    unit the retriever hands out.
    """
    entry = _PARSED.get(data)
    if entry is not None:
        return entry[0]
    unit = L0Unit.model_validate_json(data)
    _PARSED.put(data, unit, None)
    return unit


class SqliteDocStore(DocStore):
    """Sessions, raw turns, L0 units and cached layers in one SQLite file."""

    name = BACKEND

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()  # the writer connection, and the list of readers
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        #: Inside :meth:`atomic` (on the thread holding ``_lock``): writes join its transaction.
        self._batch = 0
        with guard(BACKEND, f"open {self.path}"):
            if read_only:
                if not self.path.is_file():
                    raise StoreError(f"{BACKEND}: no database at {self.path} "
                                     f"(nothing ingested yet?)")
                self._reader()  # fail now, not on the first read
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = self._connect()
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        target = f"file:{self.path}?mode=ro" if self.read_only else str(self.path)
        return sqlite3.connect(target, uri=self.read_only, check_same_thread=False,
                               isolation_level=None, timeout=30.0)

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection (opened on its first read)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            with self._lock:
                if self._closed:
                    conn.close()
                    raise StoreError(f"{BACKEND}: {self.path} is closed")
                self._readers.append(conn)
            self._local.conn = conn
        return conn

    @contextmanager
    def _tx(self, operation: str) -> Iterator[sqlite3.Connection]:
        """One locked transaction; rolled back and wrapped in StoreError on failure."""
        with self._lock, guard(BACKEND, operation):
            if self._closed:
                raise StoreError(f"{BACKEND}: {self.path} is closed")
            if self._conn is None:
                raise StoreError(f"{BACKEND}: {self.path} is open read-only")
            conn = self._conn
            if self._batch:  # the enclosing atomic() begins, commits or rolls back
                yield conn
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")  # may fail too (a full disk): then rolled back
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back itself (a full disk)
                    conn.execute("ROLLBACK")
                raise

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Every write of this thread in the block in one transaction: all land, or none.

        A rollback needs no free space, so a write refused by a full disk leaves
        nothing of the block behind. Other threads' writes wait for the block.
        """
        with self._tx("write batch"):
            self._batch += 1
            try:
                yield
            finally:
                self._batch -= 1

    def _rows(self, operation: str, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with guard(BACKEND, operation):
            if self._closed:
                raise StoreError(f"{BACKEND}: {self.path} is closed")
            return self._reader().execute(sql, params).fetchall()

    # -- sessions and raw turns -------------------------------------------
    def put_session(self, meta: SessionMeta, digest: str | None = None) -> None:
        s = meta.scope
        row = (
            s.tenant_id,
            s.user_id,
            meta.session_id,
            meta.session_date.isoformat() if meta.session_date else None,
            date_key(meta.session_date),
            json.dumps(meta.labels, sort_keys=True),
            digest,
        )
        with self._tx(f"put session {s}/{meta.session_id}") as c:
            c.execute("INSERT OR REPLACE INTO sessions VALUES (?,?,?,?,?,?,?)", row)

    def get_session(self, scope: Scope, session_id: str) -> SessionMeta | None:
        rows = self._rows(
            f"get session {scope}/{session_id}",
            "SELECT session_id, session_date, labels FROM sessions "
            "WHERE tenant_id=? AND user_id=? AND session_id=?",
            (scope.tenant_id, scope.user_id, session_id),
        )
        return _meta(scope, rows[0]) if rows else None

    def session_digest(self, scope: Scope, session_id: str) -> str | None:
        rows = self._rows(
            f"get digest {scope}/{session_id}",
            "SELECT digest FROM sessions WHERE tenant_id=? AND user_id=? AND session_id=?",
            (scope.tenant_id, scope.user_id, session_id),
        )
        return rows[0][0] if rows else None

    def list_sessions(self, scope: Scope) -> list[SessionMeta]:
        rows = self._rows(
            f"list sessions {scope}",
            "SELECT session_id, session_date, labels FROM sessions "
            "WHERE tenant_id=? AND user_id=? "
            "ORDER BY date_key IS NULL, date_key, session_id",
            (scope.tenant_id, scope.user_id),
        )
        return [_meta(scope, r) for r in rows]

    def put_turns(self, scope: Scope, session_id: str, turns: Sequence[Turn]) -> None:
        if not turns:
            return
        rows = [
            (
                scope.tenant_id,
                scope.user_id,
                session_id,
                t.index,
                json.dumps([m.model_dump(mode="json") for m in t.messages]),
            )
            for t in turns
        ]
        with self._tx(f"put {len(rows)} turns {scope}/{session_id}") as c:
            c.executemany("INSERT OR REPLACE INTO turns VALUES (?,?,?,?,?)", rows)

    def get_turns(
        self, scope: Scope, session_id: str, indices: Collection[int] | None = None
    ) -> list[Turn]:
        base = (
            "SELECT turn_index, messages FROM turns "
            "WHERE tenant_id=? AND user_id=? AND session_id=?"
        )
        params: list[Any] = [scope.tenant_id, scope.user_id, session_id]
        op = f"get turns {scope}/{session_id}"
        if indices is None:
            rows = self._rows(op, base + " ORDER BY turn_index", params)
        else:
            wanted = sorted({int(i) for i in indices})
            rows = []
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                rows += self._rows(op, f"{base} AND turn_index IN ({marks})", params + chunk)
            rows.sort(key=lambda r: r[0])
        return [
            Turn(index=i, messages=[Message.model_validate(m) for m in json.loads(msgs)])
            for i, msgs in rows
        ]

    # -- L0 units ---------------------------------------------------------
    def put_units(self, units: Sequence[L0Unit]) -> None:
        if not units:
            return
        rows = [
            (
                u.id,
                u.scope.tenant_id,
                u.scope.user_id,
                u.session_id,
                u.turn_index,
                u.model_dump_json(),
            )
            for u in units
        ]
        with self._tx(f"put {len(rows)} units") as c:
            c.executemany("INSERT OR REPLACE INTO units VALUES (?,?,?,?,?,?)", rows)

    def get_units(self, scope: Scope, unit_ids: Collection[str]) -> list[L0Unit]:
        """Units in the order their ids were given (duplicates once).

        Units read before are served from this thread's memory while the
        database is unchanged since (``PRAGMA data_version`` moves with every
        commit of any connection, this process's writer included), so a search
        whose candidates were seen before reads only the ones it has not.
        """
        order = list(dict.fromkeys(unit_ids))
        known = self._known_units()
        t, u = scope.tenant_id, scope.user_id
        found: dict[str, L0Unit] = {}
        missing = []
        for i in order:
            unit = known.get((t, u, i))
            if unit is None:
                missing.append(i)
            else:
                found[i] = unit
        for chunk in _chunks(missing):
            marks = ",".join("?" * len(chunk))
            for uid, data in self._rows(
                f"get {len(chunk)} units {scope}",
                # The unary "+" keeps SQLite from using the (tenant, user, ...)
                # index here, which would scan the whole scope; the primary key
                # finds each id directly and the scope still filters the rows.
                f"SELECT id, data FROM units WHERE +tenant_id=? AND +user_id=? AND id IN ({marks})",
                [t, u, *chunk],
            ):
                found[uid] = known[(t, u, uid)] = _unit(data)
        if len(known) > _KNOWN_UNITS:
            known.clear()
        return [found[i] for i in order if i in found]

    def _known_units(self) -> dict[tuple[str, str, str], L0Unit]:
        """This thread's units read since the database last changed (emptied on a change)."""
        version = self._rows("data version", "PRAGMA data_version", ())[0][0]
        local = self._local
        if getattr(local, "units_version", None) != version:
            local.units = {}
            local.units_version = version
        known: dict[tuple[str, str, str], L0Unit] = local.units
        return known

    def session_units(self, scope: Scope, session_id: str) -> list[L0Unit]:
        rows = self._rows(
            f"get units of {scope}/{session_id}",
            "SELECT data FROM units WHERE tenant_id=? AND user_id=? AND session_id=? "
            "ORDER BY turn_index, id",
            (scope.tenant_id, scope.user_id, session_id),
        )
        return [_unit(r[0]) for r in rows]

    # -- cached layers ----------------------------------------------------
    def get_layer(
        self, scope: Scope, session_id: str, layer: str, builder: str
    ) -> dict[str, Any] | None:
        rows = self._rows(
            f"get layer {layer}/{builder} of {scope}/{session_id}",
            "SELECT payload FROM layers WHERE tenant_id=? AND user_id=? AND session_id=? "
            "AND layer=? AND builder=?",
            (scope.tenant_id, scope.user_id, session_id, layer, builder),
        )
        return json.loads(rows[0][0]) if rows else None

    def put_layer(
        self, scope: Scope, session_id: str, layer: str, builder: str, payload: dict[str, Any]
    ) -> None:
        with guard(BACKEND, f"encode layer {layer}/{builder}"):
            blob = json.dumps(payload)
        with self._tx(f"put layer {layer}/{builder} of {scope}/{session_id}") as c:
            c.execute(
                "INSERT OR REPLACE INTO layers VALUES (?,?,?,?,?,?)",
                (scope.tenant_id, scope.user_id, session_id, layer, builder, blob),
            )

    # -- housekeeping -----------------------------------------------------
    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        where = "tenant_id=? AND user_id=?"
        params: list[Any] = [scope.tenant_id, scope.user_id]
        if session_id is not None:
            where += " AND session_id=?"
            params.append(session_id)
        with self._tx(f"delete {scope}/{session_id or '*'}") as c:
            for table in _SESSION_TABLES:
                c.execute(f"DELETE FROM {table} WHERE {where}", params)
            if session_id is None:  # a user's profiles go with the user
                c.execute(f"DELETE FROM profiles WHERE {where}", params)

    # -- entity profiles ----------------------------------------------------
    def get_profiles(self, scope: Scope, ids: Collection[str] | None = None
                     ) -> dict[str, dict[str, Any]]:
        base = "SELECT entity_id, data FROM profiles WHERE tenant_id=? AND user_id=?"
        params: list[Any] = [scope.tenant_id, scope.user_id]
        op = f"get profiles of {scope}"
        if not self._has_profiles():
            return {}
        if ids is None:
            rows = self._rows(op, base + " ORDER BY entity_id", params)
        else:
            rows = []
            for chunk in _chunks(sorted(set(ids))):
                marks = ",".join("?" * len(chunk))
                rows += self._rows(op, f"{base} AND entity_id IN ({marks})", params + chunk)
        return {str(eid): json.loads(data) for eid, data in rows}

    def put_profiles(self, scope: Scope, records: Mapping[str, dict[str, Any]], *,
                     drop: Collection[str] = ()) -> None:
        if not records and not drop:
            return
        with guard(BACKEND, f"encode profiles of {scope}"):
            rows = [(scope.tenant_id, scope.user_id, eid, json.dumps(data, ensure_ascii=False))
                    for eid, data in records.items()]
        with self._tx(f"put {len(rows)} profiles of {scope}") as c:
            for chunk in _chunks(sorted(set(drop))):
                marks = ",".join("?" * len(chunk))
                c.execute(f"DELETE FROM profiles WHERE tenant_id=? AND user_id=? "
                          f"AND entity_id IN ({marks})", [scope.tenant_id, scope.user_id, *chunk])
            c.executemany("INSERT OR REPLACE INTO profiles VALUES (?,?,?,?)", rows)

    def count_profiles(self, scope: Scope | None = None) -> int:
        if not self._has_profiles():
            return 0
        if scope is None:
            rows = self._rows("count profiles", "SELECT COUNT(*) FROM profiles", ())
        else:
            rows = self._rows(f"count profiles {scope}",
                              "SELECT COUNT(*) FROM profiles WHERE tenant_id=? AND user_id=?",
                              (scope.tenant_id, scope.user_id))
        return int(rows[0][0])

    def _has_profiles(self) -> bool:
        """A file written before profiles existed and opened read-only has no such table."""
        if self._conn is not None:
            return True
        rows = self._rows("find the profiles table", "SELECT 1 FROM sqlite_master WHERE "
                          "type='table' AND name='profiles'", ())
        return bool(rows)

    def count_turns(self, scope: Scope | None = None) -> int:
        if scope is None:
            rows = self._rows("count turns", "SELECT COUNT(*) FROM turns", ())
        else:
            rows = self._rows(
                f"count turns {scope}",
                "SELECT COUNT(*) FROM turns WHERE tenant_id=? AND user_id=?",
                (scope.tenant_id, scope.user_id),
            )
        return int(rows[0][0])

    def session_tallies(self) -> list[SessionTally]:
        rows = self._rows(
            "session tallies",
            "SELECT s.tenant_id, s.user_id, s.session_id, s.digest, "
            "(SELECT COUNT(*) FROM turns t WHERE t.tenant_id=s.tenant_id AND "
            "t.user_id=s.user_id AND t.session_id=s.session_id), "
            "(SELECT COUNT(*) FROM units u WHERE u.tenant_id=s.tenant_id AND "
            "u.user_id=s.user_id AND u.session_id=s.session_id) "
            "FROM sessions s ORDER BY s.tenant_id, s.user_id, s.session_id", ())
        return [SessionTally(Scope.model_construct(tenant_id=t, user_id=u), sid, int(nt),
                             int(nu), digest) for t, u, sid, digest, nt, nu in rows]

    def list_users(self, tenant_id: str, *, after: str | None = None,
                   limit: int = 1000) -> list[str]:
        rows = self._rows(
            f"list users of {tenant_id}",
            "SELECT DISTINCT user_id FROM sessions WHERE tenant_id=? AND user_id>? "
            "ORDER BY user_id LIMIT ?", (tenant_id, after or "", max(0, int(limit))))
        return [str(r[0]) for r in rows]

    def session_layers(self, scope: Scope, session_id: str) -> list[CachedLayer]:
        rows = self._rows(
            f"list layers of {scope}/{session_id}",
            "SELECT layer, builder, payload FROM layers WHERE tenant_id=? AND user_id=? "
            "AND session_id=? ORDER BY layer, builder",
            (scope.tenant_id, scope.user_id, session_id))
        return [CachedLayer(str(layer), str(builder), json.loads(payload))
                for layer, builder, payload in rows]

    def stats(self, tenant_id: str | None = None) -> dict[str, Any]:
        where, params = ("WHERE tenant_id=?", (tenant_id,)) if tenant_id is not None else ("", ())
        op = f"stats {tenant_id or 'all'}"

        def one(sql: str) -> int:
            return int(self._rows(op, sql, params)[0][0])

        users = one(f"SELECT COUNT(*) FROM (SELECT DISTINCT tenant_id, user_id FROM sessions "
                    f"{where})")
        layers = dict(self._rows(op, f"SELECT layer, COUNT(*) FROM layers {where} "
                                     f"GROUP BY layer", params))
        return {"users": users, "sessions": one(f"SELECT COUNT(*) FROM sessions {where}"),
                "turns": one(f"SELECT COUNT(*) FROM turns {where}"),
                "units": one(f"SELECT COUNT(*) FROM units {where}"),
                "layers": {str(k): int(v) for k, v in layers.items()}}

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with guard(BACKEND, "close"):
                for conn in [*self._readers, *([self._conn] if self._conn else [])]:
                    conn.close()
                self._readers.clear()


def _meta(scope: Scope, row: tuple[Any, ...]) -> SessionMeta:
    session_id, date_text, labels = row
    return SessionMeta(
        scope=scope,
        session_id=session_id,
        session_date=datetime.fromisoformat(date_text) if date_text else None,
        labels=json.loads(labels),
    )


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
