"""Embedded vector store: one Qdrant Edge shard in a local directory.

This is the offline default: no server, the index lives in ``Settings.vector_dir``.
Qdrant Edge has no background optimizer, so segments are only turned into
HNSW indexes when :meth:`QdrantEdgeVectorStore.flush` runs the optimizer.
Until then search is a filtered brute-force scan: correct, but at 100k points
of dim 384 about 18 ms instead of 2-3 ms. The price is paid in flush(), which
blocks for roughly a minute per 100k newly written points on two cores.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from memstrata.model import Scope
from memstrata.store._errors import _is_rust_panic, guard
from memstrata.store.types import Hit, StoreError, VectorRecord, VectorStore

BACKEND = "qdrant-edge"
_BATCH = 1024

# Graph settings: m=16/ef_construct=100 are Qdrant's defaults and keep p50 search
# of 100k points in one tenant near 2-3 ms; full_scan_threshold (KB of vectors)
# sends small scopes (<~6k points at dim 384) to an exact scan over the payload
# index, which is both exact and faster than walking the graph with a filter.
_HNSW_M, _HNSW_EF_CONSTRUCT, _FULL_SCAN_THRESHOLD_KB = 16, 100, 10_000
#: A sample of stored vectors is read from this many places spread over the id space.
_SAMPLE_WINDOWS = 16


def _to_list(vector: np.ndarray, dim: int) -> list[float]:
    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    if arr.shape[0] != dim:
        raise StoreError(f"{BACKEND}: vector has {arr.shape[0]} dimensions, the store has {dim}")
    if not np.isfinite(arr).all():
        raise StoreError(f"{BACKEND}: vector contains NaN or infinity")
    return arr.tolist()


class _IdText:
    """Point ids as the text the rest of memstrata uses, remembered by value.

    Qdrant Edge returns each id as a ``uuid.UUID``, and ``str()`` of one is
    pure Python (about 1 us: a 50-hit search spent more on it than on its
    query's filter). Hits recur across searches, so the text is kept by the
    id's integer; past ``limit`` ids the map starts again (ids never change
    meaning, so a stale entry cannot exist).
    """

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._texts: dict[int, str] = {}

    def text(self, point_id: object) -> str:
        number = getattr(point_id, "int", None)
        if number is None:  # an integer id, or a binding that returns text
            return str(point_id)
        found = self._texts.get(number)
        if found is None:
            if len(self._texts) >= self.limit:
                self._texts.clear()
            found = self._texts[number] = str(point_id)
        return found


def _scope_conditions(scope: Scope) -> list[qe.ConditionType]:
    return [
        qe.FieldCondition(key="tenant_id", match=qe.MatchValue(scope.tenant_id)),
        qe.FieldCondition(key="user_id", match=qe.MatchValue(scope.user_id)),
    ]


def _has_shard(path: Path) -> bool:
    return (path / "edge_config.json").exists() or (path / "segments").is_dir()


#: What an open that fails on the shard's own files adds: the way out.
REBUILD_HINT = ("if its files are damaged, `memstrata check` names the damage and `memstrata "
                "check --repair` moves the shard aside and rebuilds it from the L0 units in the "
                "doc store")


def _load(path: Path, config: qe.EdgeConfig) -> qe.EdgeShard:
    try:
        return qe.EdgeShard.load(str(path), config)
    except BaseException as exc:  # the engine's own error (or panic), with the fix appended
        if not isinstance(exc, Exception) and not _is_rust_panic(exc):
            raise
        raise StoreError(f"{BACKEND}: open shard at {path} failed: {type(exc).__name__}: "
                         f"{exc}; {REBUILD_HINT}") from exc


def _reraise_interrupts(exc: BaseException) -> None:
    """Let Ctrl-C and exits through; an engine error or a Rust panic is a finding."""
    if not isinstance(exc, Exception) and not _is_rust_panic(exc):
        raise exc


def _as_vector(value: object) -> list[float] | None:
    """A point's vector as the binding returns it (a list; a dict when it has none)."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and len(value) == 1:
        only = next(iter(value.values()))
        return only if isinstance(only, list) else None
    return None


def vector_problems(vectors: Sequence[object], dim: int) -> list[str | None]:
    """Per stored vector, why it is unusable (None: fine); cosine points are unit-length.

    Checked a page at a time with numpy: a point-by-point check cost more than
    reading the points.
    """
    out: list[str | None] = [None] * len(vectors)
    rows: list[list[float]] = []
    at: list[int] = []
    for i, raw in enumerate(vectors):
        v = _as_vector(raw)
        if v is None:
            out[i] = "no vector"
        elif len(v) != dim:
            out[i] = f"{len(v)} dimensions instead of {dim}"
        else:
            rows.append(v)
            at.append(i)
    if rows:
        arr = np.asarray(rows, dtype=np.float64)
        finite = np.asarray(np.isfinite(arr).all(axis=1)).tolist()
        norms: list[float] = np.linalg.norm(np.where(np.isfinite(arr), arr, 0.0), axis=1).tolist()
        for i, ok, norm in zip(at, finite, norms):
            if not ok:
                out[i] = "NaN or infinity"
            elif abs(float(norm) - 1.0) > 1e-2:
                out[i] = f"length {float(norm):.3g} instead of 1"
    return out


class QdrantEdgeVectorStore(VectorStore):
    """L0 unit vectors in an embedded Qdrant Edge shard (cosine distance).

    Payload ``tenant_id``/``user_id``/``session_id`` are keyword-indexed
    (``tenant_id`` as the tenant key) so that every scope-filtered search reads
    only its own scope's points.
    """

    name = BACKEND

    def __init__(
        self,
        path: str | Path,
        dim: int,
        *,
        hnsw_ef: int | None = None,
        optimize_on_flush: bool = True,
        read_only: bool = False,
        hnsw_m: int = _HNSW_M,
        hnsw_ef_construct: int = _HNSW_EF_CONSTRUCT,
        full_scan_threshold_kb: int = _FULL_SCAN_THRESHOLD_KB,
        search_threads: int | None = None,
    ) -> None:
        if dim < 1:
            raise StoreError(f"{BACKEND}: dim must be positive, got {dim}")
        self.path = Path(path)
        #: Refuses writes. Qdrant Edge still locks its WAL, so even a reader
        #: needs the shard to itself (the data dir lock sees to that).
        self.read_only = read_only
        self.dim = dim
        self._optimize_on_flush = optimize_on_flush
        self._params = qe.SearchParams(hnsw_ef=hnsw_ef) if hnsw_ef else None
        self._lock = threading.Lock()  # serialises writes, flush and close
        self._ids = _IdText()
        self._closed = False
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine),
            hnsw_config=qe.HnswIndexConfig(
                m=hnsw_m,
                ef_construct=hnsw_ef_construct,
                full_scan_threshold=full_scan_threshold_kb,
            ),
            # The binding holds the GIL for a whole query, so a query that fans
            # out to a pool only makes the caller's GIL wait on busy cores.
            max_search_threads=search_threads,
        )
        with guard(BACKEND, f"open shard at {self.path}"):
            if read_only and not _has_shard(self.path):
                raise StoreError(f"{BACKEND}: no shard at {self.path} (nothing ingested yet?)")
            if _has_shard(self.path):
                # Passing the config makes the engine reject a different vector size.
                self._shard = _load(self.path, config)
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                self._shard = qe.EdgeShard.create(str(self.path), config)
            try:
                if not read_only:
                    self._ensure_indexes()
            except BaseException:
                self._shard.close()
                raise

    def _ensure_indexes(self) -> None:
        present = set(self._shard.info().payload_schema)
        wanted: dict[str, qe.KeywordIndexParams] = {
            "tenant_id": qe.KeywordIndexParams(is_tenant=True),
            "user_id": qe.KeywordIndexParams(),
            # Sessions are tiny: no extra HNSW links per session value.
            "session_id": qe.KeywordIndexParams(enable_hnsw=False),
        }
        for field, params in wanted.items():
            if field not in present:
                self._shard.update(qe.UpdateOperation.create_field_index(field, params))

    # -- writes -----------------------------------------------------------
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace points by id; the last of duplicate ids in one call wins."""
        if not records:
            return
        points = [
            qe.Point(
                r.id,
                _to_list(r.vector, self.dim),
                {
                    "tenant_id": r.scope.tenant_id,
                    "user_id": r.scope.user_id,
                    "session_id": r.session_id,
                    "turn_index": r.turn_index,
                },
            )
            for r in records
        ]
        with self._lock, guard(BACKEND, f"upsert {len(points)} points"):
            self._writable()
            for start in range(0, len(points), _BATCH):
                batch = points[start : start + _BATCH]
                self._shard.update(qe.UpdateOperation.upsert_points(batch))

    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        must = _scope_conditions(scope)
        if session_id is not None:
            must.append(qe.FieldCondition(key="session_id", match=qe.MatchValue(session_id)))
        with self._lock, guard(BACKEND, f"delete {scope}/{session_id or '*'}"):
            self._writable()
            self._shard.update(qe.UpdateOperation.delete_points_by_filter(qe.Filter(must=must)))

    # -- reads ------------------------------------------------------------
    def search(
        self,
        scope: Scope,
        vector: np.ndarray,
        limit: int,
        session_ids: Collection[str] | None = None,
        *,
        sessions: bool = True,
    ) -> list[Hit]:
        if limit <= 0 or (session_ids is not None and not session_ids):
            return []
        query = _to_list(vector, self.dim)
        must = _scope_conditions(scope)
        if session_ids is not None:
            must.append(
                qe.FieldCondition(key="session_id", match=qe.MatchAny(sorted(set(session_ids))))
            )
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(query),
            filter=qe.Filter(must=must),
            with_payload=["session_id"] if sessions else False,
            params=self._params,
        )
        with guard(BACKEND, f"search {scope}"):
            self._open()
            points = self._shard.query(request)
        ids = self._ids.text
        return [
            Hit(ids(p.id), str((p.payload or {}).get("session_id", "")) if sessions else "",
                float(p.score))
            for p in points
        ]

    def count(self, scope: Scope | None = None) -> int:
        flt = None if scope is None else qe.Filter(must=_scope_conditions(scope))
        with guard(BACKEND, f"count {scope or 'all'}"):
            self._open()
            return int(self._shard.count(qe.CountRequest(exact=True, filter=flt)))

    def count_session(self, scope: Scope, session_id: str) -> int:
        must = [*_scope_conditions(scope),
                qe.FieldCondition(key="session_id", match=qe.MatchValue(session_id))]
        with guard(BACKEND, f"count {scope}/{session_id}"):
            self._open()
            return int(self._shard.count(qe.CountRequest(exact=True,
                                                         filter=qe.Filter(must=must))))

    # -- verification (``memstrata check``) -------------------------------
    def verify(self, *, decode: int | None = None, page: int = 512) -> list[str]:
        """What a read of the stored vectors finds wrong (empty: sound).

        Qdrant Edge opens a shard whose vector file lost its tail without a
        word: a mutable segment then fails every search that reaches a lost
        vector, and an indexed one reads zeros (as points without a vector, so
        search never finds them). Three reads see it: how many points still
        have a vector, one exact (brute-force) scan that touches every stored
        vector, and ``decode`` points (all of them when None) read back with
        their vectors, each checked for its dimension, finite values and unit
        length (cosine points are stored normalised) and its scope payload.
        """
        problems: list[str] = []
        with self._lock:
            self._open()
            try:
                total = int(self._shard.count(qe.CountRequest(exact=True)))
                with_vector = int(self._shard.count(qe.CountRequest(
                    exact=True, filter=qe.Filter(must=[qe.HasVectorCondition("")]))))
            except BaseException as exc:  # noqa: BLE001 - any engine failure (a panic too) is the finding
                _reraise_interrupts(exc)
                return [f"cannot count its points: {type(exc).__name__}: {exc}"]
            if with_vector != total:
                problems.append(f"{total - with_vector} of {total} points have no vector "
                                "(their vector data is gone)")
            if total:
                probe = [1.0] + [0.0] * (self.dim - 1)
                try:
                    self._shard.query(qe.QueryRequest(
                        limit=1, query=qe.Query.Nearest(probe),
                        params=qe.SearchParams(exact=True)))
                except BaseException as exc:  # noqa: BLE001 - a damaged shard panics (BaseException); interrupts re-raised
                    _reraise_interrupts(exc)
                    problems.append(f"an exact scan over every vector fails: "
                                    f"{type(exc).__name__}: {exc}")
            problems += self._decode(total if decode is None else min(decode, total), page,
                                     total)
        return problems

    def _decode(self, wanted: int, page: int, total: int) -> list[str]:
        """Read ``wanted`` points back with vectors and payload; what is wrong with them.

        Fewer than all: taken from :data:`_SAMPLE_WINDOWS` places spread over the
        id space, since an indexed segment stores its points in id order and a
        file cut short loses the highest ids only.
        """
        bad: dict[str, str] = {}
        seen: set[str] = set()
        if wanted >= total:
            starts: list[str | None] = [None]
            each = wanted
        else:
            windows = max(1, min(_SAMPLE_WINDOWS, wanted))
            starts = [str(uuid.UUID(int=k * ((1 << 128) // windows))) for k in range(windows)]
            each = -(-wanted // windows)
        try:
            for start in starts:
                offset: int | uuid.UUID | str | None = start
                taken = 0
                while taken < each:
                    points, offset = self._shard.scroll(qe.ScrollRequest(
                        offset=offset, limit=min(page, each - taken), with_vector=True,
                        with_payload=["tenant_id", "user_id", "session_id"]))
                    vectors = [p.vector for p in points]
                    for p, why in zip(points, vector_problems(vectors, self.dim)):
                        payload = p.payload or {}
                        if why is None and not all(isinstance(payload.get(k), str) for k in
                                                   ("tenant_id", "user_id", "session_id")):
                            why = "its tenant, user or session payload is missing"
                        if why is not None:
                            bad[str(p.id)] = why
                        seen.add(str(p.id))
                    taken += len(points)
                    if offset is None or not points:
                        break
        except BaseException as exc:  # noqa: BLE001 - a damaged shard panics (BaseException); interrupts re-raised
            _reraise_interrupts(exc)
            return [f"reading points back with their vectors fails after {len(seen)}: "
                    f"{type(exc).__name__}: {exc}"]
        if not bad:
            return []
        shown = ", ".join(f"{i} ({why})" for i, why in list(bad.items())[:3])
        return [f"{len(bad)} of {len(seen)} points read back are unusable: {shown}"
                + (" ..." if len(bad) > 3 else "")]

    def read_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these point ids (ids without a usable vector are left out)."""
        if not ids:
            return {}
        with guard(BACKEND, f"retrieve {len(ids)} vectors"):
            self._open()
            records = self._shard.retrieve(list(ids), None, True)
        out: dict[str, np.ndarray] = {}
        for r in records:
            v = _as_vector(r.vector)
            if v is not None and len(v) == self.dim:
                out[self._ids.text(r.id)] = np.asarray(v, dtype=np.float32)
        return out

    # -- lifecycle --------------------------------------------------------
    def optimize(self) -> bool:
        """Build HNSW indexes for segments that outgrew the indexing threshold.

        Blocking; about a minute per 100k new points of dim 384 on two cores.
        Returns whether anything was rebuilt.
        """
        with self._lock, guard(BACKEND, "optimize"):
            self._open()
            return bool(self._shard.optimize())

    def flush(self) -> None:
        """Persist pending writes, then (by default) index what grew past the threshold."""
        if self.read_only:
            return
        with self._lock, guard(BACKEND, "flush"):
            self._open()
            self._shard.flush()
        if self._optimize_on_flush:
            self.optimize()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with guard(BACKEND, "close"):
                if not self.read_only:
                    self._shard.flush()
                self._shard.close()

    def _open(self) -> None:
        if self._closed:
            raise StoreError(f"{BACKEND}: store at {self.path} is closed")

    def _writable(self) -> None:
        self._open()
        if self.read_only:
            raise StoreError(f"{BACKEND}: store at {self.path} is open read-only")
