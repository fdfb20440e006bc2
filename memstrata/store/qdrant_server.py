"""Vector store on a Qdrant server (or qdrant-client's local mode).

Production uses a shared Qdrant collection for all tenants: ``tenant_id`` is a
tenant-keyed payload index, so Qdrant co-locates each tenant's points and a
scope-filtered search never scans other tenants. Local mode (``path`` or
``location=":memory:"``) runs the same code without a server, which is how the
contract tests exercise it; it ignores payload indexes.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from memstrata.model import Scope
from memstrata.store._errors import guard, tls_setting
from memstrata.store.types import Hit, StoreError, VectorRecord, VectorStore

BACKEND = "qdrant"
#: The setting that fixes an untrusted server certificate.
CA_SETTING = "MEMSTRATA_QDRANT_CA_FILE"
_BATCH = 512


def _to_list(vector: np.ndarray, dim: int) -> list[float]:
    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    if arr.shape[0] != dim:
        raise StoreError(f"{BACKEND}: vector has {arr.shape[0]} dimensions, the store has {dim}")
    if not np.isfinite(arr).all():
        raise StoreError(f"{BACKEND}: vector contains NaN or infinity")
    return arr.tolist()


def _scope_filter(scope: Scope, session_ids: Collection[str] | None = None) -> models.Filter:
    must: list[models.Condition] = [
        models.FieldCondition(key="tenant_id", match=models.MatchValue(value=scope.tenant_id)),
        models.FieldCondition(key="user_id", match=models.MatchValue(value=scope.user_id)),
    ]
    if session_ids is not None:
        must.append(
            models.FieldCondition(
                key="session_id", match=models.MatchAny(any=sorted(set(session_ids)))
            )
        )
    return models.Filter(must=must)


class QdrantVectorStore(VectorStore):
    """L0 unit vectors in one Qdrant collection shared by all tenants (cosine distance)."""

    name = BACKEND

    def __init__(
        self,
        collection: str,
        dim: int,
        *,
        url: str | None = None,
        api_key: str | None = None,
        path: str | Path | None = None,
        location: str | None = None,
        timeout: int = 10,
        ca_file: str | None = None,
    ) -> None:
        if sum(x is not None for x in (url, path, location)) != 1:
            raise StoreError(f"{BACKEND}: give exactly one of url, path or location")
        if dim < 1:
            raise StoreError(f"{BACKEND}: dim must be positive, got {dim}")
        self.collection = collection
        self.dim = dim
        where = url or (str(path) if path is not None else location)
        # The first requests: an untrusted certificate is reported as the setting to fix.
        with tls_setting(url, CA_SETTING):
            with guard(BACKEND, f"connect to {where}"):
                if url is not None:
                    # ca_file (MEMSTRATA_QDRANT_CA_FILE): the CA bundle https is verified with.
                    tls: dict[str, Any] = {"verify": ca_file} if ca_file else {}
                    self._client = QdrantClient(url=url, api_key=api_key, timeout=timeout, **tls)
                elif path is not None:
                    Path(path).mkdir(parents=True, exist_ok=True)
                    self._client = QdrantClient(path=str(path))
                else:
                    self._client = QdrantClient(location=location)
            try:
                with guard(BACKEND, f"prepare collection {collection!r}"):
                    self._ensure_collection()
            except StoreError:
                self._client.close()  # local mode holds a file lock until closed
                raise

    def _ensure_collection(self) -> None:
        c = self._client
        if c.collection_exists(self.collection):
            vectors = c.get_collection(self.collection).config.params.vectors
            size = getattr(vectors, "size", None)
            if size is not None and size != self.dim:
                raise StoreError(
                    f"{BACKEND}: collection {self.collection!r} holds {size}-dimensional "
                    f"vectors, the store was opened with dim={self.dim}"
                )
            return
        c.create_collection(
            self.collection,
            vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE),
        )
        keyword = models.KeywordIndexType.KEYWORD
        indexes = {
            "tenant_id": models.KeywordIndexParams(type=keyword, is_tenant=True),
            "user_id": models.KeywordIndexParams(type=keyword),
            "session_id": models.KeywordIndexParams(type=keyword),
        }
        with warnings.catch_warnings():
            # Local mode warns that payload indexes do nothing there; the server uses them.
            warnings.filterwarnings("ignore", message="Payload indexes have no effect")
            for field, schema in indexes.items():
                c.create_payload_index(self.collection, field, field_schema=schema, wait=True)

    # -- writes -----------------------------------------------------------
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        points = [
            models.PointStruct(
                id=r.id,
                vector=_to_list(r.vector, self.dim),
                payload={
                    "tenant_id": r.scope.tenant_id,
                    "user_id": r.scope.user_id,
                    "session_id": r.session_id,
                    "turn_index": r.turn_index,
                },
            )
            for r in records
        ]
        with guard(BACKEND, f"upsert {len(points)} points into {self.collection!r}"):
            for start in range(0, len(points), _BATCH):
                self._client.upsert(
                    self.collection, points=points[start : start + _BATCH], wait=True
                )

    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        flt = _scope_filter(scope, None if session_id is None else [session_id])
        with guard(BACKEND, f"delete {scope}/{session_id or '*'} from {self.collection!r}"):
            self._client.delete(
                self.collection, points_selector=models.FilterSelector(filter=flt), wait=True
            )

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
        with guard(BACKEND, f"search {scope} in {self.collection!r}"):
            res = self._client.query_points(
                self.collection,
                query=query,
                query_filter=_scope_filter(scope, session_ids),
                limit=limit,
                with_payload=["session_id"] if sessions else False,
            )
        return [
            Hit(str(p.id), str((p.payload or {}).get("session_id", "")) if sessions else "",
                float(p.score))
            for p in res.points
        ]

    def count(self, scope: Scope | None = None) -> int:
        flt = None if scope is None else _scope_filter(scope)
        with guard(BACKEND, f"count {scope or 'all'} in {self.collection!r}"):
            return int(self._client.count(self.collection, count_filter=flt, exact=True).count)

    def count_session(self, scope: Scope, session_id: str) -> int:
        with guard(BACKEND, f"count {scope}/{session_id} in {self.collection!r}"):
            return int(self._client.count(self.collection,
                                          count_filter=_scope_filter(scope, [session_id]),
                                          exact=True).count)

    def close(self) -> None:
        with guard(BACKEND, "close"):
            self._client.close()
