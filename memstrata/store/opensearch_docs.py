"""Document store on OpenSearch: ``<prefix>-sessions``, ``-turns``, ``-units``, ``-layers``,
``-profiles``.

Each record is one document with a deterministic ``_id`` (a re-put overwrites),
keyword fields for the scope, and the record itself under ``data``, an object
with ``"enabled": false`` (kept in ``_source``, never indexed, so arbitrary
layer payloads cannot explode the mapping). Every write refreshes: the
ingest and read paths expect to read their own writes at once, and this store
is not on the hot search path.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from opensearchpy import NotFoundError, OpenSearch, helpers

from memstrata.ids import record_id
from memstrata.model import L0Unit, Message, Scope, SessionMeta, Turn
from memstrata.store._errors import guard
from memstrata.store._opensearch import (
    DEFAULT_TIMEOUT_S,
    ensure_index,
    make_client,
    scope_filter,
    search_all,
)
from memstrata.store.sqlite_docs import date_key
from memstrata.store.types import CachedLayer, DocStore, StoreError

BACKEND = "opensearch"

_KEYWORD = {"type": "keyword"}
_OPAQUE = {"type": "object", "enabled": False}
_SCOPE_FIELDS = {"tenant_id": _KEYWORD, "user_id": _KEYWORD, "session_id": _KEYWORD}
_MAPPINGS: dict[str, dict[str, Any]] = {
    "sessions": {"date_key": {"type": "double"}, "digest": _KEYWORD},
    "turns": {"turn_index": {"type": "integer"}, "doc_id": _KEYWORD},
    "units": {"turn_index": {"type": "integer"}, "doc_id": _KEYWORD},
    "layers": {"layer": _KEYWORD, "builder": _KEYWORD},
    # One record per (user, entity): no session_id, so a session's delete never matches one
    # and a user's delete (by scope) removes them all.
    "profiles": {"entity_id": _KEYWORD},
}
_MGET_CHUNK = 500


def _body(extra: dict[str, Any]) -> dict[str, Any]:
    props = {**_SCOPE_FIELDS, **extra, "data": _OPAQUE}
    return {"mappings": {"dynamic": "strict", "properties": props}}


def _turn_id(scope: Scope, session_id: str, index: int) -> str:
    return record_id(scope.tenant_id, scope.user_id, session_id, "L3", index, index)


def _session_id(scope: Scope, session_id: str) -> str:
    return record_id(scope.tenant_id, scope.user_id, session_id, "session")


def _profile_id(scope: Scope, entity_id: str) -> str:
    # '#' is in no session id, so these ids never meet a session record's.
    return record_id(scope.tenant_id, scope.user_id, "#profiles",
                     json.dumps(["profile", entity_id]))


def _layer_id(scope: Scope, session_id: str, layer: str, builder: str) -> str:
    # JSON keeps (layer, builder) unambiguous whatever characters they hold.
    key = json.dumps(["layer", layer, builder])
    return record_id(scope.tenant_id, scope.user_id, session_id, key)


class OpenSearchDocStore(DocStore):
    """Sessions, raw turns, L0 units and cached layers in four OpenSearch indices."""

    name = BACKEND

    def __init__(
        self,
        url: str | None = None,
        *,
        client: OpenSearch | None = None,
        prefix: str = "memstrata",
        user: str | None = None,
        password: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 2,
        ca_file: str | None = None,
        page_size: int = 1000,
    ) -> None:
        if (url is None) == (client is None):
            raise StoreError(f"{BACKEND}: give exactly one of url or client")
        self.timeout = timeout
        self.page_size = page_size
        self.indices = {kind: f"{prefix}-{kind}" for kind in _MAPPINGS}
        self._owns_client = client is None
        self._client = (
            client
            if client is not None
            else make_client(url or "", user=user, password=password, timeout=timeout,
                             max_retries=max_retries, ca_file=ca_file)
        )
        for kind, extra in _MAPPINGS.items():
            with guard(BACKEND, f"create index {self.indices[kind]}"):
                ensure_index(self._client, self.indices[kind], _body(extra), timeout,
                             url=url)

    # -- helpers ----------------------------------------------------------
    def _source(self, scope: Scope, session_id: str, **fields: Any) -> dict[str, Any]:
        return {
            "tenant_id": scope.tenant_id,
            "user_id": scope.user_id,
            "session_id": session_id,
            **fields,
        }

    def _get(self, kind: str, doc_id: str, scope: Scope) -> dict[str, Any] | None:
        try:
            src = self._client.get(
                index=self.indices[kind], id=doc_id, request_timeout=self.timeout
            )["_source"]
        except NotFoundError:
            return None
        # Ids are derived from the scope; checking it anyway costs nothing.
        if src.get("tenant_id") != scope.tenant_id or src.get("user_id") != scope.user_id:
            return None
        return src

    def _put(self, kind: str, doc_id: str, source: dict[str, Any]) -> None:
        self._client.index(
            index=self.indices[kind],
            id=doc_id,
            body=source,
            refresh=True,
            request_timeout=self.timeout,
        )

    def _bulk(self, kind: str, docs: list[tuple[str, dict[str, Any]]]) -> None:
        actions = (
            {"_op_type": "index", "_index": self.indices[kind], "_id": i, "_source": s}
            for i, s in docs
        )
        helpers.bulk(
            self._client, actions, chunk_size=500, refresh=True, request_timeout=self.timeout
        )

    def _all(
        self, kind: str, flt: list[dict[str, Any]], sort: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        query = {"bool": {"filter": flt}}
        hits = search_all(
            self._client,
            self.indices[kind],
            query,
            sort,
            timeout=self.timeout,
            page_size=self.page_size,
        )
        return [h["_source"] for h in hits]

    @staticmethod
    def _session_filter(scope: Scope, session_id: str) -> list[dict[str, Any]]:
        return [*scope_filter(scope), {"term": {"session_id": session_id}}]

    # -- sessions and raw turns -------------------------------------------
    def put_session(self, meta: SessionMeta, digest: str | None = None) -> None:
        fields: dict[str, Any] = {
            "digest": digest,
            "data": {
                "session_date": meta.session_date.isoformat() if meta.session_date else None,
                "labels": dict(meta.labels),
            },
        }
        key = date_key(meta.session_date)
        if key is not None:  # absent, not null, so that "missing: _last" sorts it last
            fields["date_key"] = key
        with guard(BACKEND, f"put session {meta.scope}/{meta.session_id}"):
            self._put(
                "sessions",
                _session_id(meta.scope, meta.session_id),
                self._source(meta.scope, meta.session_id, **fields),
            )

    def get_session(self, scope: Scope, session_id: str) -> SessionMeta | None:
        with guard(BACKEND, f"get session {scope}/{session_id}"):
            src = self._get("sessions", _session_id(scope, session_id), scope)
        return None if src is None else _meta(scope, src)

    def session_digest(self, scope: Scope, session_id: str) -> str | None:
        with guard(BACKEND, f"get digest {scope}/{session_id}"):
            src = self._get("sessions", _session_id(scope, session_id), scope)
        return None if src is None else src.get("digest")

    def list_sessions(self, scope: Scope) -> list[SessionMeta]:
        sort: list[dict[str, Any]] = [
            {"date_key": {"order": "asc", "missing": "_last"}},
            {"session_id": "asc"},
        ]
        with guard(BACKEND, f"list sessions {scope}"):
            sources = self._all("sessions", scope_filter(scope), sort)
        return [_meta(scope, s) for s in sources]

    def put_turns(self, scope: Scope, session_id: str, turns: Sequence[Turn]) -> None:
        if not turns:
            return
        docs = []
        for t in turns:
            doc_id = _turn_id(scope, session_id, t.index)
            data = {"messages": [m.model_dump(mode="json") for m in t.messages]}
            docs.append(
                (
                    doc_id,
                    self._source(scope, session_id, turn_index=t.index, doc_id=doc_id, data=data),
                )
            )
        with guard(BACKEND, f"put {len(docs)} turns {scope}/{session_id}"):
            self._bulk("turns", docs)

    def get_turns(
        self, scope: Scope, session_id: str, indices: Collection[int] | None = None
    ) -> list[Turn]:
        flt = self._session_filter(scope, session_id)
        if indices is not None:
            wanted = sorted({int(i) for i in indices})
            if not wanted:
                return []
            flt.append({"terms": {"turn_index": wanted}})
        sort = [{"turn_index": "asc"}, {"doc_id": "asc"}]
        with guard(BACKEND, f"get turns {scope}/{session_id}"):
            sources = self._all("turns", flt, sort)
        return [
            Turn(
                index=s["turn_index"],
                messages=[Message.model_validate(m) for m in s["data"]["messages"]],
            )
            for s in sources
        ]

    # -- L0 units ---------------------------------------------------------
    def put_units(self, units: Sequence[L0Unit]) -> None:
        if not units:
            return
        docs = [
            (
                u.id,
                self._source(
                    u.scope,
                    u.session_id,
                    turn_index=u.turn_index,
                    doc_id=u.id,
                    data=u.model_dump(mode="json"),
                ),
            )
            for u in units
        ]
        with guard(BACKEND, f"put {len(docs)} units"):
            self._bulk("units", docs)

    def get_units(self, scope: Scope, unit_ids: Collection[str]) -> list[L0Unit]:
        """Units in the order their ids were given (duplicates once)."""
        order = list(dict.fromkeys(unit_ids))
        found: dict[str, L0Unit] = {}
        with guard(BACKEND, f"get {len(order)} units {scope}"):
            for start in range(0, len(order), _MGET_CHUNK):
                chunk = order[start : start + _MGET_CHUNK]
                res = self._client.mget(
                    index=self.indices["units"],
                    body={"ids": chunk},
                    request_timeout=self.timeout,
                )
                for doc in res["docs"]:
                    src = doc.get("_source") if doc.get("found") else None
                    if (
                        src
                        and src["tenant_id"] == scope.tenant_id
                        and src["user_id"] == scope.user_id
                    ):
                        found[doc["_id"]] = L0Unit.model_validate(src["data"])
        return [found[i] for i in order if i in found]

    def session_units(self, scope: Scope, session_id: str) -> list[L0Unit]:
        sort = [{"turn_index": "asc"}, {"doc_id": "asc"}]
        with guard(BACKEND, f"get units of {scope}/{session_id}"):
            sources = self._all("units", self._session_filter(scope, session_id), sort)
        return [L0Unit.model_validate(s["data"]) for s in sources]

    # -- cached layers ----------------------------------------------------
    def get_layer(
        self, scope: Scope, session_id: str, layer: str, builder: str
    ) -> dict[str, Any] | None:
        with guard(BACKEND, f"get layer {layer}/{builder} of {scope}/{session_id}"):
            src = self._get("layers", _layer_id(scope, session_id, layer, builder), scope)
        return None if src is None else src["data"]

    def put_layer(
        self, scope: Scope, session_id: str, layer: str, builder: str, payload: dict[str, Any]
    ) -> None:
        with guard(BACKEND, f"put layer {layer}/{builder} of {scope}/{session_id}"):
            # Round-trip through JSON so what is stored is exactly what a read returns.
            data = json.loads(json.dumps(payload))
            self._put(
                "layers",
                _layer_id(scope, session_id, layer, builder),
                self._source(scope, session_id, layer=layer, builder=builder, data=data),
            )

    # -- housekeeping -----------------------------------------------------
    def delete(self, scope: Scope, session_id: str | None = None) -> None:
        flt = scope_filter(scope) if session_id is None else self._session_filter(scope, session_id)
        with guard(BACKEND, f"delete {scope}/{session_id or '*'}"):
            for index in self.indices.values():
                self._client.delete_by_query(
                    index=index,
                    body={"query": {"bool": {"filter": flt}}},
                    refresh=True,
                    conflicts="proceed",
                    request_timeout=self.timeout,
                )

    # -- entity profiles ----------------------------------------------------
    def get_profiles(self, scope: Scope, ids: Collection[str] | None = None
                     ) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        with guard(BACKEND, f"get profiles of {scope}"):
            if ids is None:
                for src in self._all("profiles", scope_filter(scope), [{"entity_id": "asc"}]):
                    out[src["entity_id"]] = src["data"]
                return out
            wanted = sorted(set(ids))
            for start in range(0, len(wanted), _MGET_CHUNK):
                chunk = wanted[start : start + _MGET_CHUNK]
                res = self._client.mget(index=self.indices["profiles"],
                                        body={"ids": [_profile_id(scope, e) for e in chunk]},
                                        request_timeout=self.timeout)
                for doc in res["docs"]:
                    found = doc.get("_source") if doc.get("found") else None
                    if found and found["tenant_id"] == scope.tenant_id \
                            and found["user_id"] == scope.user_id:
                        out[found["entity_id"]] = found["data"]
        return out

    def put_profiles(self, scope: Scope, records: Mapping[str, dict[str, Any]], *,
                     drop: Collection[str] = ()) -> None:
        with guard(BACKEND, f"put {len(records)} profiles of {scope}"):
            if drop:
                flt = [*scope_filter(scope), {"terms": {"entity_id": sorted(set(drop))}}]
                self._client.delete_by_query(
                    index=self.indices["profiles"], body={"query": {"bool": {"filter": flt}}},
                    refresh=True, conflicts="proceed", request_timeout=self.timeout)
            if records:
                # Round-trip through JSON so what is stored is exactly what a read returns.
                self._bulk("profiles", [
                    (_profile_id(scope, eid), {"tenant_id": scope.tenant_id,
                                               "user_id": scope.user_id, "entity_id": eid,
                                               "data": json.loads(json.dumps(data))})
                    for eid, data in records.items()])

    def count_profiles(self, scope: Scope | None = None) -> int:
        body = None if scope is None else {"query": {"bool": {"filter": scope_filter(scope)}}}
        with guard(BACKEND, f"count profiles {scope or 'all'}"):
            res = self._client.count(index=self.indices["profiles"], body=body,
                                     request_timeout=self.timeout)
        return int(res["count"])

    def count_turns(self, scope: Scope | None = None) -> int:
        body = None if scope is None else {"query": {"bool": {"filter": scope_filter(scope)}}}
        with guard(BACKEND, f"count turns {scope or 'all'}"):
            res = self._client.count(
                index=self.indices["turns"], body=body, request_timeout=self.timeout
            )
        return int(res["count"])

    def list_users(self, tenant_id: str, *, after: str | None = None,
                   limit: int = 1000) -> list[str]:
        limit = max(0, int(limit))
        if limit == 0:
            return []
        composite: dict[str, Any] = {"size": limit, "sources": [
            {"u": {"terms": {"field": "user_id", "order": "asc"}}}]}
        if after is not None:
            composite["after"] = {"u": after}
        body = {"size": 0, "query": {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}]}},
                "aggs": {"users": {"composite": composite}}}
        with guard(BACKEND, f"list users of {tenant_id}"):
            buckets = self._client.search(index=self.indices["sessions"], body=body,
                                          request_timeout=self.timeout)[
                "aggregations"]["users"]["buckets"]
        return [str(b["key"]["u"]) for b in buckets]

    def session_layers(self, scope: Scope, session_id: str) -> list[CachedLayer]:
        sort = [{"layer": "asc"}, {"builder": "asc"}]
        with guard(BACKEND, f"list layers of {scope}/{session_id}"):
            sources = self._all("layers", self._session_filter(scope, session_id), sort)
        return [CachedLayer(s["layer"], s["builder"], s["data"]) for s in sources]

    def stats(self, tenant_id: str | None = None) -> dict[str, Any]:
        flt = [] if tenant_id is None else [{"term": {"tenant_id": tenant_id}}]
        query = {"bool": {"filter": flt}}

        def count(kind: str) -> int:
            res = self._client.count(index=self.indices[kind], body={"query": query},
                                     request_timeout=self.timeout)
            return int(res["count"])

        with guard(BACKEND, f"stats {tenant_id or 'all'}"):
            users = self._client.search(index=self.indices["sessions"], body={
                "size": 0, "query": query,
                "aggs": {"users": {"composite": {"size": 10_000, "sources": [
                    {"t": {"terms": {"field": "tenant_id"}}},
                    {"u": {"terms": {"field": "user_id"}}}]}}}},
                request_timeout=self.timeout)["aggregations"]["users"]["buckets"]
            layers = self._client.search(index=self.indices["layers"], body={
                "size": 0, "query": query,
                "aggs": {"layers": {"terms": {"field": "layer", "size": 100}}}},
                request_timeout=self.timeout)["aggregations"]["layers"]["buckets"]
            return {"users": len(users), "sessions": count("sessions"),
                    "turns": count("turns"), "units": count("units"),
                    "layers": {b["key"]: int(b["doc_count"]) for b in layers}}

    def close(self) -> None:
        if self._owns_client:
            with guard(BACKEND, "close"):
                self._client.close()


def _meta(scope: Scope, src: dict[str, Any]) -> SessionMeta:
    data = src["data"]
    date_text = data.get("session_date")
    return SessionMeta(
        scope=scope,
        session_id=src["session_id"],
        session_date=datetime.fromisoformat(date_text) if date_text else None,
        labels=data.get("labels") or {},
    )
