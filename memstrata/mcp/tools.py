"""The memory tools, each one call (or a few) to the service through the async client.

Progressive disclosure: ``search_memory`` ranks sessions and shows their L0
summaries; ``read_session`` reads chosen layers of one session (L1 key facts,
L2 per-turn notes, L3 the raw turns); ``ask`` lets the service's controller
drill as deep as it needs and returns the answer with its sources and depth.
Every call's tenant is the credential's (API key or JWT); the user is bound
or named (see :func:`memstrata.mcp.access.scope_for`); a tool needs the
``read``, ``write`` or ``delete`` scope. Profiles do not exist yet, so no tool
reads one.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Literal, TypeVar

import grpc
from pydantic import BaseModel, Field

from memstrata.client.errors import (
    InvalidRequest,
    RateLimited,
    RemoteError,
    RemoteProfileNotFound,
    RemoteSessionNotFound,
    Unauthenticated,
)
from memstrata.client.durability import Durability
from memstrata.client.plan import event
from memstrata.mcp.access import Caller, KeyVerifier, ToolRefused, scope_for
from memstrata.mcp.settings import McpSettings
from memstrata.mcp.shapes import (
    AddResult,
    AskResult,
    RawTurn,
    DeleteResult,
    SearchResult,
    SessionInfo,
    SessionLayers,
    SessionList,
    Unit,
)
from memstrata.mcp.tracing import note_caller
from memstrata.model import MAX_ID_LEN, Scope
from memstrata.profile_records import MAX_ENTITY_CHARS, EntityProfile, EntitySummary

__all__ = ["MemoryTools", "TurnIn"]

T = TypeVar("T")

User = Annotated[str | None, Field(
    description="Id of the user whose memory to use, within your credential's tenant. "
                "Leave it out when your key or token, or the server, is bound to one user.")]
SessionId = Annotated[str, Field(min_length=1, max_length=MAX_ID_LEN,
                                 description="A session id from search_memory or "
                                             "list_sessions.")]


class TurnIn(BaseModel):
    """One message to remember."""

    role: Literal["user", "assistant"]
    content: str = Field(min_length=1)
    speaker: str | None = None
    #: Give one to make a retry safe: a message id memory already holds is not added twice.
    message_id: str | None = Field(None, max_length=MAX_ID_LEN)
    ts: datetime | None = None


class ProfileResult(BaseModel):
    """The profiles an entity names, every bullet with its source turns."""

    user: str
    profiles: list[EntityProfile]


class EntityList(BaseModel):
    """Who and what the user's conversations mention: kind, relation, aliases."""

    user: str
    entities: list[EntitySummary]


class MemoryTools:
    """The tool functions; ``caller`` says who is calling (the HTTP key, or stdio's fixed one)."""

    def __init__(self, settings: McpSettings, verifier: KeyVerifier,
                 caller: Callable[[], Awaitable[Caller]]) -> None:
        self.settings = settings
        self.verifier = verifier
        self._caller = caller

    # -- plumbing -------------------------------------------------------------------
    async def _scope(self, user: str | None, tool: str,
                     need: str = "read") -> tuple[Caller, Scope]:
        """The caller and the call's scope; a credential without the ``need`` scope is
        refused here, before any call (the service checks an API key's scopes again)."""
        caller = await self._caller()
        credential = "token" if caller.via == "jwt" else "API key"
        if caller.scopes is not None and need not in caller.scopes:
            has = ", ".join(sorted(caller.scopes)) or "no scope"
            raise ToolRefused(f"{tool}: needs the {need!r} scope; this {credential} has {has}")
        note_caller(caller.tenant, caller.via)
        return caller, scope_for(self.settings, caller.tenant, user, token_user=caller.user,
                                 credential=credential)

    async def _call(self, caller: Caller, what: str, coro: Awaitable[T]) -> T:
        """Await one service call, turning its failures into messages the model can act on."""
        try:
            return await coro
        except RemoteSessionNotFound:
            raise ToolRefused(f"{what}: no such session for this user") from None
        except Unauthenticated:
            self.verifier.forget(caller.key)
            raise ToolRefused("the service refused this API key (unknown or revoked)") from None
        except RateLimited as exc:
            after = f"; retry in {exc.retry_after_s:g} s" if exc.retry_after_s else ""
            raise ToolRefused(f"limited: {exc.details}{after}") from None
        except InvalidRequest as exc:
            raise ToolRefused(exc.details) from None
        except RemoteError as exc:
            if exc.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise ToolRefused(f"the memstrata service is unavailable ({exc.code.name}): "
                                  f"{exc.details}; retry later") from None
            raise ToolRefused(f"{exc.code.name}: {exc.details}") from None

    def _deletes_allowed(self, tool: str) -> None:
        if not self.settings.allow_delete:
            raise ToolRefused(f"{tool}: deleting is turned off on this server "
                              "(its operator can set MEMSTRATA_MCP_ALLOW_DELETE=true)")

    # -- read tools ------------------------------------------------------------------
    async def search_memory(
        self,
        query: Annotated[str, Field(min_length=1, description="What to look for.")],
        top_k: Annotated[int | None, Field(ge=1, description="How many sessions to return "
                                                             "(default: the service's).")] = None,
        user: User = None,
    ) -> SearchResult:
        """Rank a user's past sessions for a query; each hit shows its best turns' L0
        summaries. Read deeper with read_session, or let ask answer a question."""
        caller, scope = await self._scope(user, "search_memory")
        hits = await self._call(caller, "search_memory",
                                caller.client.search(scope, [query], top_k=top_k))
        return SearchResult.of(scope.user_id, hits)

    async def ask(
        self,
        question: Annotated[str, Field(min_length=1, description="A question about the "
                                                                 "user's past.")],
        asked_on: Annotated[datetime | None, Field(
            description="When the question is asked (ISO 8601), for relative dates; "
                        "default: now.")] = None,
        max_depth: Annotated[int | None, Field(
            ge=0, le=3, description="Deepest layer the answer may read: 0 summaries, 1 key "
                                    "facts, 2 turn notes, 3 raw turns.")] = None,
        user: User = None,
    ) -> AskResult:
        """Answer a question from the user's memory. Reads coarse layers first and goes
        deeper only where needed; returns the answer, the sources it rests on and how deep
        it read."""
        caller, scope = await self._scope(user, "ask")
        options = {} if max_depth is None else {"max_depth": max_depth}
        answer = await self._call(caller, "ask",
                                  caller.client.answer(scope, question, asked_on, **options))
        return AskResult.of(answer)

    async def read_session(
        self,
        session_id: SessionId,
        layers: Annotated[list[Literal[0, 1, 2, 3]], Field(
            min_length=1, description="Layers to read: 0 per-turn summaries, 1 key facts, "
                                     "2 per-turn notes, 3 raw turns.")] = [0],  # noqa: B006
        turns: Annotated[list[int] | None, Field(
            description="Raw turns (layer 3) to return, by index; default: all.")] = None,
        user: User = None,
    ) -> SessionLayers:
        """Read one session's layers, coarse to fine; ask for the finer ones only when the
        coarser do not hold what you need."""
        caller, scope = await self._scope(user, "read_session")
        c = caller.client
        meta = await self._call(caller, "session_id", c.session(scope, session_id))
        out = SessionLayers(user=scope.user_id, session=SessionInfo.of(meta))
        wanted = set(layers)
        if 0 in wanted:
            units = await self._call(caller, "session_id", c.l0(scope, session_id))
            out.l0 = [Unit.of(u) for u in units]
        if 1 in wanted:
            out.with_facts(await self._call(caller, "session_id", c.facts(scope, session_id)))
        if 2 in wanted:
            out.with_notes(await self._call(caller, "session_id", c.notes(scope, session_id)))
        if 3 in wanted:
            raw = await self._call(caller, "session_id", c.raw(scope, session_id, turns))
            out.l3 = [RawTurn.of(t) for t in raw]
        return out

    async def list_sessions(self, user: User = None) -> SessionList:
        """List a user's sessions, oldest first."""
        caller, scope = await self._scope(user, "list_sessions")
        metas = await self._call(caller, "list_sessions", caller.client.sessions(scope))
        return SessionList(user=scope.user_id, sessions=[SessionInfo.of(m) for m in metas])

    async def get_profile(
        self,
        entity: Annotated[str, Field(
            min_length=1, max_length=MAX_ENTITY_CHARS,
            description="Who or what: a name, an alias, a relation ('my sister') or 'me'.")],
        user: User = None,
    ) -> ProfileResult:
        """What memory knows about one person, pet, place or organisation (or the user,
        'me'): identity, attributes, preferences, events and plans, each bullet with the
        turns it came from; facts that changed keep their history."""
        caller, scope = await self._scope(user, "get_profile")
        try:
            found = await self._call(caller, "entity", caller.client.get_profile(scope, entity))
        except RemoteProfileNotFound:
            raise ToolRefused(f"entity: no profile named {entity!r} for this user") from None
        return ProfileResult(user=scope.user_id, profiles=found)

    async def list_entities(self, user: User = None) -> EntityList:
        """List the people, pets, places and organisations the user's conversations
        mention (the user and the assistant first), with their relation and aliases."""
        caller, scope = await self._scope(user, "list_entities")
        found = await self._call(caller, "list_entities", caller.client.list_entities(scope))
        return EntityList(user=scope.user_id, entities=found)

    # -- write tools ------------------------------------------------------------------
    async def add_turns(
        self,
        session_id: SessionId,
        turns: Annotated[list[TurnIn], Field(min_length=1, description="The messages, in "
                                                                        "order.")],
        session_date: Annotated[datetime | None, Field(
            description="When the session took place (ISO 8601).")] = None,
        user: User = None,
    ) -> AddResult:
        """Remember messages of a conversation (new or continued session). Messages with a
        message_id already in memory are not added twice."""
        caller, scope = await self._scope(user, "add_turns", "write")
        events = [event(scope.user_id, session_id, t.message_id or f"mcp-{uuid.uuid4().hex}",
                        t.role, t.content, ts=t.ts, session_date=session_date,
                        speaker=t.speaker) for t in turns]
        # The tenant stated on every ingest: a JWT caller's client carries the platform key.
        reply = await self._call(caller, "add_turns",
                                 caller.client.ingest(events, tenant_id=scope.tenant_id))
        return AddResult(session_id=session_id, accepted=reply.accepted,
                         duplicates=reply.duplicates, durability=str(Durability.of(reply)))

    async def delete_session(self, session_id: SessionId, user: User = None) -> DeleteResult:
        """Delete one session from every store (raw turns, layers, vectors, index). Cannot
        be undone; refused unless the server allows deletes."""
        self._deletes_allowed("delete_session")
        caller, scope = await self._scope(user, "delete_session", "delete")
        await self._call(caller, "session_id", caller.client.session(scope, session_id))
        receipt = await self._call(caller, "delete_session",
                                   caller.client.delete(scope, session_id))
        return DeleteResult.of(receipt)

    async def delete_user(self, user: User = None) -> DeleteResult:
        """Delete everything remembered about a user. Cannot be undone; refused unless the
        server allows deletes."""
        self._deletes_allowed("delete_user")
        caller, scope = await self._scope(user, "delete_user", "delete")
        receipt = await self._call(caller, "delete_user", caller.client.delete(scope))
        return DeleteResult.of(receipt)

