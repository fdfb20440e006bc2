"""LangChain adapters over the gRPC client: a retriever and a chat-message history.

:class:`MemstrataRetriever` turns the service's ``Search`` (one user's
sessions, best first) into ``Document`` objects; :class:`MemstrataChatMessageHistory`
keeps one conversation as one memstrata session, so what an agent said is
remembered (and searchable, and answerable) like any ingested chat.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, PrivateAttr

from memstrata.client.errors import RemoteSessionNotFound
from memstrata.client.plan import event
from memstrata.client.sync import MemoryClient
from memstrata.integrations.connection import Call, Connection, Plan, gone
from memstrata.model import MAX_ID_LEN, Scope, SessionHit, is_identifier

__all__ = ["MemstrataChatMessageHistory", "MemstrataRetriever"]


def _user(user_id: str, field: str = "user_id") -> str:
    if not is_identifier(user_id):
        raise ValueError(f"{field}: {user_id!r} is not a memstrata id (1 to {MAX_ID_LEN} "
                         "letters, digits or ._:@/+-)")
    return user_id


def _scope(user: str) -> Plan[Scope]:
    tenant = yield Call("key_tenant")
    return Scope(tenant_id=tenant, user_id=user)


class MemstrataRetriever(BaseRetriever):
    """Documents for a query from one user's memory, one per session found, best first.

    ``page_content`` is the matched turns' L0 summaries, or with ``content="turns"``
    those turns verbatim (L3, one more call per session). ``metadata``:
    ``session_id``, ``session_date`` (ISO, or None), ``score`` (the service's) and
    ``turns`` (the matched turn indices). Connect with ``address`` / ``api_key``
    (unset: ``MEMSTRATA_API_*``), or share a store's ``connection``.
    """

    user_id: str
    k: int = Field(8, ge=1, le=100)
    content: Literal["summaries", "turns"] = "summaries"
    address: str | None = None
    api_key: str | None = Field(None, repr=False)
    connection: Connection | None = Field(None, exclude=True, repr=False)
    _conn: Connection = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        _user(self.user_id)
        self._conn = self.connection or Connection(self.address, api_key=self.api_key)

    def _plan(self, query: str) -> Plan[list[Document]]:
        scope = yield from _scope(self.user_id)
        hits: list[SessionHit] = yield Call("search", (scope, query, self.k))
        if self.content == "summaries":
            return [_document(h, "\n".join(u.summary for u in h.units)) for h in hits]
        reads = yield [Call("raw", (scope, h.session_id, sorted({u.turn_index for u in h.units})
                                    or None)) for h in hits]
        return [_document(h, "\n\n".join(t.text() for t in turns))
                for h, turns in zip(hits, reads) if not gone(turns)]

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self._conn.run(self._plan(query))

    async def _aget_relevant_documents(
            self, query: str, *,
            run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        return await self._conn.arun(self._plan(query))


def _document(hit: SessionHit, text: str) -> Document:
    return Document(page_content=text, metadata={
        "session_id": hit.session_id,
        "session_date": hit.session_date.isoformat() if hit.session_date else None,
        "score": hit.score,
        "turns": sorted({u.turn_index for u in hit.units}),
    })


_ROLES: dict[type[BaseMessage], Literal["user", "assistant"]] = {
    HumanMessage: "user", AIMessage: "assistant"}


class MemstrataChatMessageHistory(BaseChatMessageHistory):
    """One conversation kept as the memstrata session ``session_id`` of ``user_id``.

    Human messages are ``user`` turns and AI messages ``assistant`` ones (memstrata
    keeps no system or tool messages: adding one is refused, naming it). A message's
    id is its LangChain ``id`` when it has one (memstrata adds an id it holds only
    once, so give ids to make a retried add safe), else a hash of its place in the
    session and its text. ``clear`` is ``DeleteSession``.
    """

    def __init__(self, user_id: str, session_id: str, *, address: str | None = None,
                 api_key: str | None = None, client: MemoryClient | None = None,
                 connection: Connection | None = None) -> None:
        self.user_id = _user(user_id)
        self.session_id = _user(session_id, "session_id")
        self.connection = connection or Connection(address, api_key=api_key, client=client)

    def _read(self) -> Plan[list[BaseMessage]]:
        scope = yield from _scope(self.user_id)
        try:
            turns = yield Call("raw", (scope, self.session_id))
        except RemoteSessionNotFound:
            return []
        out: list[BaseMessage] = []
        for turn in turns:
            for m in turn.messages:
                kind = HumanMessage if m.role == "user" else AIMessage
                out.append(kind(content=m.content, id=m.source_id))
        return out

    def _add(self, messages: Sequence[BaseMessage]) -> Plan[None]:
        roles = []
        for i, m in enumerate(messages):
            role = next((r for t, r in _ROLES.items() if isinstance(m, t)), None)
            if role is None:
                raise ValueError(f"messages[{i}]: a {m.type} message; memstrata keeps human "
                                 "(user) and AI (assistant) messages only")
            roles.append(role)
        if not messages:
            return None
        # Only a message without an id needs its place in the session (for its hash).
        held = [] if all(self._own_id(m) for m in messages) else (yield from self._read())
        now = datetime.now(timezone.utc)
        events = []
        for n, (m, role) in enumerate(zip(messages, roles), start=len(held)):
            events.append(event(self.user_id, self.session_id, self._message_id(m, n, m.text),
                                role, m.text, ts=now, session_date=now))
        yield Call("ingest", (events,))
        return None

    @staticmethod
    def _own_id(m: BaseMessage) -> str | None:
        return m.id if m.id and len(m.id) <= MAX_ID_LEN else None

    def _message_id(self, m: BaseMessage, n: int, text: str) -> str:
        if own := self._own_id(m):
            return own
        digest = hashlib.sha256(f"{self.session_id}\x1f{n}\x1f{m.type}\x1f{text}".encode())
        return "lc:" + digest.hexdigest()[:32]

    def _clear(self) -> Plan[None]:
        scope = yield from _scope(self.user_id)
        try:
            yield Call("delete", (scope, self.session_id))
        except RemoteSessionNotFound:
            pass
        return None

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return self.connection.run(self._read())

    async def aget_messages(self) -> list[BaseMessage]:
        return await self.connection.arun(self._read())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self.connection.run(self._add(list(messages)))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await self.connection.arun(self._add(list(messages)))

    def clear(self) -> None:
        self.connection.run(self._clear())

    async def aclear(self) -> None:
        await self.connection.arun(self._clear())
