"""A LangGraph ``BaseStore`` kept in memstrata, over the gRPC client.

``namespace[0]`` is the memstrata user (the tenant is the API key's); each
item is one session of that user (see :mod:`memstrata.integrations.items`):

* ``put`` of a new item sends one turn (the value's text, then its JSON); of an
  unchanged value, nothing; of a changed value, deletes the item's session and
  sends the new turn (so search never finds an old version), keeping
  ``created_at``; ``index=[paths]`` picks the text (``index=False`` is taken as
  the default: memstrata indexes every item);
* ``put(..., None)`` and ``delete`` are ``DeleteSession`` (every store drops it);
* ``get`` reads the session (``GetSession``, ``ReadRaw``);
* ``search`` with a ``query`` is the service's ``Search`` over the user's
  memory, hits kept when they are items under the prefix (score: the service's);
  without a query, the user's items under the prefix, newest first;
* ``list_namespaces`` comes from the user's sessions (``ListSessions``).

Items are ordinary sessions, so ``memstrata ask`` and the Answer RPC read them
too, and ``memstrata forget --user`` deletes them. Ops of a batch run in
order; a put is not atomic (between its delete and its write, a reader sees
no item) and concurrent writers of one key race (the later message wins).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from memstrata.client.aio import AsyncMemoryClient
from memstrata.client.errors import RemoteSessionNotFound
from memstrata.client.plan import event
from memstrata.client.settings import ClientSettings
from memstrata.client.sync import MemoryClient
from memstrata.integrations import items
from memstrata.integrations.connection import Call, Connection, Plan, gone
from memstrata.limits import SERVICE_MAX_TOP_K
from memstrata.model import Scope, SessionMeta

__all__ = ["MemstrataStore"]

#: The service's default ``MEMSTRATA_SERVICE_MAX_TOP_K`` (declared once, in memstrata.limits).
MAX_TOP_K = SERVICE_MAX_TOP_K


class MemstrataStore(BaseStore):
    """LangGraph long-term memory in memstrata: ``namespace = (user, ...)``.

    ``address``, ``api_key``, ``settings``: as :class:`~memstrata.client.MemoryClient`
    takes them (unset: ``MEMSTRATA_API_*``); or give ``client`` / ``aclient`` /
    ``connection``. ``index_fields``: the default paths whose text memstrata
    indexes and answers from (a put's ``index`` list overrides them; unset: the
    whole value). ``search_top_k``: how many of the user's best sessions a query
    search asks the service for before keeping the items under the prefix (at
    least three times ``offset + limit``, at most the service's top-k limit).
    """

    __slots__ = ("connection", "index_fields", "search_top_k", "max_top_k")

    def __init__(self, address: str | None = None, *, api_key: str | None = None,
                 settings: ClientSettings | None = None, client: MemoryClient | None = None,
                 aclient: AsyncMemoryClient | None = None,
                 connection: Connection | None = None,
                 index_fields: Sequence[str] | None = None, search_top_k: int = 20,
                 max_top_k: int = MAX_TOP_K) -> None:
        if not 1 <= search_top_k <= max_top_k:
            raise ValueError(f"search_top_k: {search_top_k}, must be 1 to {max_top_k}")
        self.connection = connection or Connection(address, api_key=api_key,
                                                   settings=settings, client=client,
                                                   aclient=aclient)
        self.index_fields = list(index_fields) if index_fields else None
        self.search_top_k = search_top_k
        self.max_top_k = max_top_k

    # -- BaseStore ------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self.connection.run(self._plan(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [await self.connection.arun(self._plan(op)) for op in ops]

    def close(self) -> None:
        self.connection.close()

    async def aclose(self) -> None:
        await self.connection.aclose()

    def __enter__(self) -> "MemstrataStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one op -----------------------------------------------------------------------
    def _plan(self, op: Op) -> Plan[Any]:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return self._get(items.locate(op.namespace, str(op.key)))
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown store operation {type(op).__name__}")

    @staticmethod
    def _scope(user: str) -> Plan[Scope]:
        tenant = yield Call("key_tenant")
        return Scope(tenant_id=tenant, user_id=user)

    def _get(self, where: items.Location) -> Plan[Item | None]:
        return (yield from self._read(where))[1]

    def _read(self, where: items.Location) -> Plan[tuple[bool, Item | None]]:
        """Whether the item's session exists, and the item it holds."""
        scope = yield from self._scope(where.user)
        try:
            meta = yield Call("session", (scope, where.session_id))
            turns = yield Call("raw", (scope, where.session_id))
        except RemoteSessionNotFound:
            return False, None
        return True, items.decode(meta, turns)

    def _put(self, op: PutOp) -> Plan[None]:
        where = items.locate(op.namespace, str(op.key))
        scope = yield from self._scope(where.user)
        if op.value is None:
            yield from self._drop(scope, where)
            return None
        fields = op.index if isinstance(op.index, list) else self.index_fields
        written = items.encode(where, op.value, fields)
        now = datetime.now(timezone.utc)
        exists, current = yield from self._read(where)
        if current is not None and current.value == json.loads(written.value_json):
            return None  # unchanged: a retried or repeated put adds nothing
        if exists:
            yield from self._drop(scope, where)  # the old value leaves every store
        created = current.created_at if current is not None else now
        labels = where.labels(created)
        yield Call("ingest", ([
            event(where.user, where.session_id, where.message_id(written.value_json, "text"),
                  "user", written.text, session_date=now, labels=labels),
            event(where.user, where.session_id, where.message_id(written.value_json, "value"),
                  "assistant", written.value_json, session_date=now, labels=labels),
        ],))
        return None

    @staticmethod
    def _drop(scope: Scope, where: items.Location) -> Plan[None]:
        try:
            yield Call("delete", (scope, where.session_id))
        except RemoteSessionNotFound:
            pass  # already gone: deleting is idempotent
        return None

    def _search(self, op: SearchOp) -> Plan[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        scope = yield from self._scope(items.check_user(prefix, "namespace_prefix"))
        if op.limit < 1 or op.offset < 0:
            raise ValueError(f"limit: {op.limit}, offset: {op.offset}; need limit >= 1, "
                             "offset >= 0")
        want = op.offset + op.limit
        candidates: list[tuple[SessionMeta, float | None]]
        if op.query:
            top_k = min(self.max_top_k, max(self.search_top_k, 3 * want))
            hits = yield Call("search", (scope, op.query, top_k))
            ids = [h.session_id for h in hits if h.session_id.startswith(items.PREFIX)]
            metas = yield [Call("session", (scope, sid)) for sid in ids]
            scores = {h.session_id: h.score for h in hits}
            candidates = [(m, scores[m.session_id]) for m in metas if not gone(m)]
        else:
            metas = yield Call("sessions", (scope,))
            candidates = [(m, None) for m in sorted(
                metas, key=lambda m: m.session_date or datetime.min.replace(tzinfo=timezone.utc),
                reverse=True)]
        candidates = [(m, s) for m, s in candidates
                      if (w := items.located(m)) is not None and items.under(w.namespace, prefix)]
        found: list[SearchItem] = []
        step = max(want, 8)
        for start in range(0, len(candidates), step):
            chunk = candidates[start:start + step]
            reads = yield [Call("raw", (scope, m.session_id)) for m, _ in chunk]
            for (meta, score), turns in zip(chunk, reads):
                item = None if gone(turns) else items.decode(meta, turns)
                if item is not None and items.matches(item.value, op.filter or {}):
                    found.append(SearchItem(item.namespace, item.key, item.value,
                                            item.created_at, item.updated_at, score))
            if len(found) >= want:
                break
        return found[op.offset:want]

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        conditions = tuple(op.match_conditions or ())
        prefixes = [c.path for c in conditions if c.match_type == "prefix"]
        if not prefixes:
            raise InvalidNamespaceError(
                "list_namespaces: give prefix=(user, ...); memstrata lists one user's "
                "namespaces at a time (the tenant comes from the API key)")
        scope = yield from self._scope(items.check_user(prefixes[0], "prefix"))
        metas = yield Call("sessions", (scope,))
        spaces = {w.namespace for m in metas if (w := items.located(m)) is not None}
        kept = [ns for ns in spaces if all(items.fits(ns, c) for c in conditions)]
        if op.max_depth is not None:
            kept = [ns[:op.max_depth] for ns in kept]
        return sorted(set(kept))[op.offset:op.offset + op.limit]
