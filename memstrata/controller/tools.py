"""The seven controller tools over a :class:`~memstrata.roles.MemoryReader`.

Both policies act only through :meth:`MemoryTools.call`, so every action is
budgeted, added to the evidence set and traced the same way whether a rule or
an LLM chose it. A bad call (arguments that are not JSON, an unknown or
switched-off tool, a session the user does not have, an exhausted budget)
never raises: it comes back as an error result that the LLM can read and
recover from, and it is recorded in the trace.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from memstrata.evidence import cues as cue_rules
from memstrata.evidence import lexical
from memstrata.controller.config import ControllerSettings
from memstrata.evidence import lines
from memstrata.controller.state import ControllerState
from memstrata.evidence.trace import Trace
from memstrata.layers import markdown as md
from memstrata.llm import budget as answer_budget
from memstrata.contract import QueryError, SessionNotFound
from memstrata.model import Evidence, Layer, Scope, SessionHit, SessionMeta, Turn
from memstrata.profiles import query as profile_query
from memstrata.route_plan import RoutePlan
from memstrata.roles import GraphSearcher, MemoryReader
from memstrata.text.dates import find_relative_dates

log = logging.getLogger(__name__)
T = TypeVar("T")

TOOL_NAMES = ("read_profile", "search", "read_facts", "read_turns", "read_raw", "interpret_dates", "decompose",
              "reflect")
_SHOWN_WITH_SUMMARIES = 5
#: Ranking bonus for lines of the turns a search matched best (see ``LineSet``).
TURN_BOOST = 0.15
_BOOSTED_UNITS = 3
_UNITS_SHOWN = 2


class ToolError(Exception):
    """A tool call that cannot be carried out; the message is shown to the model."""


@dataclass
class Reflection:
    """What a reflection round concluded (APDMem's reflection output, Figure 8 fields)."""

    sufficient: bool
    items: list[str] = field(default_factory=list)
    gaps: str = ""
    new_queries: list[str] = field(default_factory=list)


class Reflector(Protocol):
    """Judges the evidence so far: rules offline, an LLM otherwise."""

    def reflect(self, state: ControllerState, trace: Trace) -> Reflection: ...


@dataclass
class ToolResult:
    """What one tool call returned (``content`` is what the model reads)."""

    tool: str
    content: str
    sessions: list[str] = field(default_factory=list)
    layer: Layer | None = None
    added: int = 0
    tokens_read: int = 0
    error: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    #: One line for the trace (what the call found).
    summary: str | None = None
    #: L1/L2 reads: True when every layer read came from the cache (no build).
    cached: bool | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _fn(name: str, description: str, properties: dict[str, Any],
        required: Sequence[str] = ()) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties,
                       "required": list(required), "additionalProperties": False}}}


_SESSION_IDS = {"type": "array", "items": {"type": "string"}, "minItems": 1,
                "description": "Session ids as shown by search."}
_TURNS = {"type": "array", "items": {"type": "integer", "minimum": 1},
          "description": "Turn numbers to read (default: all turns)."}

SCHEMAS: dict[str, dict[str, Any]] = {
    "read_profile": _fn(
        "read_profile",
        "Read the entity and persona profiles (one cross-session layer, read before any "
        "session): resolves whom a question is about (the user, the assistant, a named or "
        "related person, pet or place, or whoever holds a fact in a 'who' question) and "
        "returns that one's bullets for the attribute asked, each with its source turns, or "
        "says the attribute is not stated.",
        {"question": {"type": "string",
                      "description": "The question or a focused part of it (default: the "
                                     "user's question)."}}),
    "search": _fn(
        "search",
        "Find the user's sessions that match one or more queries (hybrid keyword and "
        "semantic search over per-turn summaries, L0). Returns ranked sessions with their best "
        "matching turn summaries, and the key facts (L1) of the best unexplored sessions.",
        {"queries": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                     "description": "3-5 short, varied queries work best."},
         "top_k": {"type": "integer", "minimum": 1, "description": "How many sessions."}},
        ["queries"]),
    "read_facts": _fn(
        "read_facts", "Read the key facts (L1) of sessions: cheap, coarse, usually enough.",
        {"session_ids": _SESSION_IDS}, ["session_ids"]),
    "read_turns": _fn(
        "read_turns",
        "Read the turn-by-turn notes (L2) of one session, in order: finer than key facts.",
        {"session_id": {"type": "string"}, "turns": _TURNS}, ["session_id"]),
    "read_raw": _fn(
        "read_raw",
        "Read the verbatim messages (L3) of the turns of one session that best match a "
        "query. Costly and budgeted: use it for exact wording, names, numbers.",
        {"session_id": {"type": "string"},
         "query": {"type": "string", "description": "What to look for (default: the question)."},
         "turns": _TURNS,
         "limit": {"type": "integer", "minimum": 1, "description": "At most this many turns."}},
        ["session_id"]),
    "interpret_dates": _fn(
        "interpret_dates",
        "Turn relative time phrases (\"last year\", \"two weeks ago\") into calendar dates, "
        "counted from the date the question was asked.",
        {"text": {"type": "string", "description": "Text to interpret (default: the question)."}}),
    "decompose": _fn(
        "decompose", "Split a compound or multi-hop question into focused sub-questions.",
        {"question": {"type": "string", "description": "Default: the user's question."}}),
    "reflect": _fn(
        "reflect",
        "Check whether the evidence gathered so far answers the question, what is missing, "
        "and which new queries could find it. Finishes the search when nothing new was found "
        "since the previous reflection.",
        {}),
}


def _as_str_list(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
        raise ToolError(f"{name}: expected a list of strings")
    out = [str(v).strip() for v in value if str(v).strip()]
    if not out:
        raise ToolError(f"{name}: must not be empty")
    return out


def _as_int_list(value: Any, name: str) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise ToolError(f"{name}: expected a list of turn numbers")
    out: list[int] = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise ToolError(f"{name}: {v!r} is not a turn number")
        try:
            out.append(int(v))
        except ValueError:
            raise ToolError(f"{name}: {v!r} is not a turn number") from None
    return out


def _as_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ToolError(f"{name}: expected an integer")
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ToolError(f"{name}: expected an integer, got {value!r}") from None
    if n < 1:
        raise ToolError(f"{name}: must be at least 1")
    return n


class ReaderProfiles:
    """A user's profiles as :func:`memstrata.profiles.query.read` takes them (stored views
    and key names), read through :meth:`MemoryReader.entity_profiles`, so every reader
    (local, client, Ray actor) answers alike; read once per scope in one answer."""

    def __init__(self, memory: MemoryReader) -> None:
        self._memory = memory
        self._read: dict[Scope, list[Any]] = {}

    def _profiles(self, scope: Scope) -> list[Any]:
        if scope not in self._read:
            self._read[scope] = self._memory.entity_profiles(scope, everything=True)
        return self._read[scope]

    def views(self, scope: Scope, *, everything: bool = False) -> list[dict[str, Any]]:
        return [p.as_view() for p in self._profiles(scope)]

    def key_names(self, scope: Scope) -> dict[str, str]:
        names: dict[str, str] = {}
        for p in self._profiles(scope):
            names.update(p.names)
        return names


class MemoryTools:
    """The tools bound to one question's state, memory, limits and trace."""

    def __init__(self, memory: MemoryReader, state: ControllerState,
                 settings: ControllerSettings, trace: Trace, reflector: Reflector | None = None,
                 *, max_query_chars: int = 2000) -> None:
        self.memory = memory
        self.max_query_chars = max_query_chars
        self.state = state
        self.settings = settings
        self.trace = trace
        self.reflector = reflector
        #: The user's profiles, read through the reader role once per answer.
        self.profiles = ReaderProfiles(memory)

    # -- what is offered -------------------------------------------------------
    def enabled(self) -> list[str]:
        s = self.settings
        off = {"read_facts": not s.use_l1, "read_turns": not s.use_l2, "read_raw": not s.use_l3,
               "reflect": not s.use_reflect or self.reflector is None,
               "decompose": not s.use_decompose, "interpret_dates": not s.use_interpret_dates,
               "read_profile": not s.use_profiles}
        return [n for n in TOOL_NAMES if not off.get(n, False)]

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI ``tools`` entries for the enabled tools."""
        return [SCHEMAS[n] for n in self.enabled()]

    # -- the one entry point ---------------------------------------------------
    def call(self, name: str, arguments: str | Mapping[str, Any] | None = None, *,
             note: str | None = None) -> ToolResult:
        """Run a tool; errors come back as a result (never raised) and are traced."""
        t0 = time.perf_counter()
        args: dict[str, Any] = {}
        try:
            args = self._parse(arguments)
            if name not in TOOL_NAMES:
                raise ToolError(f"unknown tool {name!r}; available: {', '.join(self.enabled())}")
            if name not in self.enabled():
                raise ToolError(f"tool {name!r} is switched off in this configuration; "
                                f"available: {', '.join(self.enabled())}")
            result: ToolResult = getattr(self, f"_{name}")(**self._only(name, args))
        except (ToolError, SessionNotFound, QueryError) as exc:
            msg = str(exc.args[0]) if isinstance(exc, SessionNotFound) and exc.args else str(exc)
            self.state.errors += 1
            result = ToolResult(tool=name, content=f"ERROR: {msg}", error=msg)
        ms = (time.perf_counter() - t0) * 1000
        shown = args if args else ({"raw": arguments} if isinstance(arguments, str)
                                   and arguments.strip() not in ("", "{}") else {})
        entry = self.trace.add(
            self.state.steps, name, arguments=shown, sessions=result.sessions,
            layer=result.layer, tokens_out=result.tokens_read, ms=ms,
            note=("error: " + result.error) if result.error else
            "; ".join(x for x in (note, result.summary) if x) or None)
        if result.cached is not None:
            entry.cached = result.cached
        if name == "search" and result.ok:
            drilled = self._auto_drill(result.data.get("hits", []))
            if drilled:
                result.content += "\n\nKey facts of the top unexplored sessions (auto-drill):" \
                    "\n" + "\n\n".join(r.content for r in drilled if r.ok)
                result.added += sum(r.added for r in drilled)
        return result

    @staticmethod
    def _parse(arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        if arguments is None:
            return {}
        if isinstance(arguments, Mapping):
            return dict(arguments)
        text = arguments.strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolError(f"arguments are not valid JSON ({exc.msg} at char {exc.pos}); "
                            "send a JSON object") from None
        if not isinstance(value, dict):
            raise ToolError("arguments must be a JSON object")
        return value

    @staticmethod
    def _only(name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Keep the declared parameters; a model that adds others is not punished for it."""
        props = SCHEMAS[name]["function"]["parameters"]["properties"]
        # The LLM sometimes sends one session id where a list is declared, or the reverse.
        if name == "read_facts" and "session_ids" not in args and "session_id" in args:
            args = {**args, "session_ids": args["session_id"]}
        if name == "search" and "queries" not in args and "query" in args:
            args = {**args, "queries": args["query"]}
        return {k: v for k, v in args.items() if k in props}

    # -- helpers ----------------------------------------------------------------
    def _resolve(self, session_id: Any) -> str:
        """Exact id, or a unique case-insensitive / number-only match ("3" -> "session_3")."""
        sid = str(session_id).strip()
        known = self.state.sessions
        if sid in known:
            return sid
        low = {k.lower(): k for k in known}
        if sid.lower() in low:
            return low[sid.lower()]
        digits = re.sub(r"\D", "", sid)
        if digits:
            match = [k for k in known if re.sub(r"\D", "", k) == digits]
            if len(match) == 1:
                return match[0]
        raise ToolError(f"no session {sid!r} for this user; use the ids that search returns")

    def _may_drill(self, session_id: str) -> None:
        s = self.state
        if session_id not in s.drilled and len(s.drilled) >= self.settings.max_drilled_sessions:
            raise ToolError(f"drill budget used: {self.settings.max_drilled_sessions} sessions "
                            "already read; read deeper in those or answer")

    def _meta(self, session_id: str) -> SessionMeta:
        return self.state.sessions[session_id]

    def _booked(self) -> bool | None:
        """Book the L1/L2 builds the last read caused on the trace; True if all were cached.

        The builder's LLM calls become ``llm:builder`` steps (construction: their tokens
        and cost count in this answer's); their time moves from memory time to LLM time.
        """
        answer = answer_budget.current()
        if answer is None:
            return None
        builds, reads = answer.take()
        what = ", ".join(f"{r.layer} of {r.session_id}" for r in reads if not r.cached)
        for b in builds:
            self.trace.llm(self.state.steps, "builder", b.model, b.prompt_tokens,
                           b.completion_tokens, b.ms, note=f"construction: {what or 'a layer'}")
            self.trace.ms_memory = max(0.0, self.trace.ms_memory - b.ms)
        return all(r.cached for r in reads) if reads else None

    def _read_layer(self, read: Callable[[], T]) -> tuple[T, bool | None]:
        """One L1/L2 read, timed as memory time, with the builds it caused booked."""
        answer = answer_budget.current()
        if answer is not None:
            answer.take()  # anything booked before is not this read's
        with self.trace.memory_time():
            value = read()
        return value, self._booked()

    # -- search -------------------------------------------------------------------
    def _search(self, queries: Any, top_k: Any = None) -> ToolResult:
        qs = list(dict.fromkeys(_as_str_list(queries, "queries")))
        limit = self.max_query_chars
        qs = [q[:limit] for q in qs][: self.settings.max_queries_per_search]
        k = _as_int(top_k, "top_k") or self.settings.search_top_k
        expansion: Any = None
        with self.trace.memory_time():
            settings = self.settings
            if isinstance(self.memory, GraphSearcher) and (settings.use_graph
                                                           or settings.use_profile_match):
                # The question's route plan: relation / multi-hop cues expand the search
                # through the relation graph, the named entities' bullets may lift the
                # sessions they came from (memstrata.route_plan).
                route = RoutePlan.for_question(self.state.question, self.state.cues,
                                               enabled=settings.use_graph,
                                               match=settings.use_profile_match)
                hits, expansion = self.memory.search_expanded(
                    self.state.scope, qs, top_k=k, route=route)
            else:
                hits = self.memory.search(self.state.scope, qs, top_k=k)
        s = self.state
        s.queries.extend(q for q in qs if q not in s.queries)
        for rank_s, h in enumerate(hits):
            old = s.candidates.get(h.session_id)
            if old is None or h.score > old.score:
                s.candidates[h.session_id] = h
            for rank_u, u in enumerate(h.units[:_BOOSTED_UNITS]):
                b = TURN_BOOST / (1 + rank_u) / (1 + 0.25 * rank_s)
                key = (h.session_id, u.turn_index)
                if b > s.lines.turn_boost.get(key, 0.0):
                    s.lines.turn_boost[key] = b
        added, lines_out, tokens = 0, [], 0
        for rank, h in enumerate(hits, start=1):
            date = h.session_date.strftime("%Y-%m-%d") if h.session_date else "unknown date"
            lines_out.append(f"{rank}. {h.session_id} ({date}) score={h.score:.4f}")
            if rank <= _SHOWN_WITH_SUMMARIES and h.units:
                units = h.units[:_UNITS_SHOWN]
                text = "\n".join(f"   Turn {u.turn_index}: {u.summary}" for u in units)
                lines_out.append(text)
                tokens += lexical.estimate_tokens(text)
                ev = Evidence(session_id=h.session_id, layer=Layer.L0,
                              session_date=h.session_date, content=text,
                              turn_indices=sorted(u.turn_index for u in units))
                added += s.add(ev, [ln for u in units for ln in lines.split(
                    h.session_id, h.session_date, Layer.L0, u.summary, (u.turn_index,),
                    s.participants, source_ids=u.source_ids)])
        content = "\n".join(lines_out) if hits else "No sessions matched."
        data: dict[str, Any] = {"hits": hits}
        summary = f"{len(hits)} sessions"
        if expansion is not None:
            data["graph"] = expansion.as_json()
            reached = [e for e in data["graph"].get("reached", []) if e.get("hops", 0) > 0]
            if expansion.plan.expand:
                summary += (f"; graph: {len(data['graph'].get('sessions', {}))} sessions "
                            f"lifted via {len(reached)} linked entities")
            if "matched" in data["graph"]:
                summary += f"; profile match: {len(data['graph']['matched'])} sessions lifted"
        return ToolResult("search", content, [h.session_id for h in hits], Layer.L0, added,
                          tokens, data=data, summary=summary)

    def _auto_drill(self, hits: Sequence[SessionHit]) -> list[ToolResult]:
        """APDMem's auto-drill: L1 of the best sessions not read yet (3 per search)."""
        s = self.settings
        if not s.use_l1 or s.auto_drill <= 0:
            return []
        picked = [h.session_id for h in hits if h.session_id not in self.state.drilled]
        room = max(0, s.max_drilled_sessions - len(self.state.drilled))
        picked = picked[: min(s.auto_drill, room)]
        return [self.call("read_facts", {"session_ids": [sid]}, note="auto-drill")
                for sid in picked]

    # -- reads ----------------------------------------------------------------------
    def _read_facts(self, session_ids: Any) -> ToolResult:
        ids = [self._resolve(x) for x in _as_str_list(session_ids, "session_ids")]
        ids = list(dict.fromkeys(ids))
        parts, added, tokens = [], 0, 0
        cached: list[bool] = []
        for sid in ids:
            self._may_drill(sid)
            facts, hit = self._read_layer(functools.partial(self.memory.facts, self.state.scope, sid))
            if hit is not None:
                cached.append(hit)
            text = md.render_l1(facts)
            tokens += lexical.estimate_tokens(text)
            date = facts.meta.session_date
            ev = Evidence(session_id=sid, layer=Layer.L1, session_date=date, content=text)
            added += self.state.add(ev, [
                ln for f in facts.facts for ln in lines.split(
                    sid, date, Layer.L1, f.text, f.turn_indices, self.state.participants)])
            self.state.mark_drilled(sid, Layer.L1)
            parts.append(text)
        return ToolResult("read_facts", "\n\n".join(parts), ids, Layer.L1, added, tokens,
                          cached=all(cached) if cached else None)

    def _read_turns(self, session_id: Any, turns: Any = None) -> ToolResult:
        sid = self._resolve(session_id)
        wanted = _as_int_list(turns, "turns")
        self._may_drill(sid)
        notes, hit = self._read_layer(lambda: self.memory.notes(self.state.scope, sid))
        kept = [n for n in notes.notes if wanted is None or n.turn_index in wanted]
        if not kept:
            have = ", ".join(str(n.turn_index) for n in notes.notes)
            raise ToolError(f"session {sid} has no turns {wanted}; it has turns {have}")
        view = notes.model_copy(update={"notes": kept})
        text = md.render_l2(view)
        date = notes.meta.session_date
        ev = Evidence(session_id=sid, layer=Layer.L2, session_date=date, content=text,
                      turn_indices=[n.turn_index for n in kept])
        added = self.state.add(ev, [
            ln for n in kept for b in n.bullets for ln in lines.split(
                sid, date, Layer.L2, b, (n.turn_index,), self.state.participants)])
        self.state.mark_drilled(sid, Layer.L2)
        self.state.notes_read.add(sid)
        return ToolResult("read_turns", text, [sid], Layer.L2, int(added),
                          lexical.estimate_tokens(text), cached=hit)

    def _read_raw(self, session_id: Any, query: Any = None, turns: Any = None,
                  limit: Any = None) -> ToolResult:
        sid = self._resolve(session_id)
        wanted = _as_int_list(turns, "turns")
        left = self.settings.max_raw_turns - self.state.raw_turns_used
        if left <= 0:
            raise ToolError(f"raw-turn budget used ({self.settings.max_raw_turns} turns); "
                            "answer from what you have")
        self._may_drill(sid)
        n = min(left, _as_int(limit, "limit") or self.settings.raw_turns_per_read)
        with self.trace.memory_time():
            all_turns = self.memory.raw(self.state.scope, sid)
        seen = self.state.raw_read.setdefault(sid, set())
        if wanted is not None:
            pool = [t for t in all_turns if t.index in wanted and t.index not in seen]
            if not pool and not any(t.index in wanted for t in all_turns):
                raise ToolError(f"session {sid} has no turns {wanted}")
        else:
            q = str(query).strip() if isinstance(query, str) and query.strip() else \
                self.state.question
            pool = rank_turns(q, [t for t in all_turns if t.index not in seen])
        chosen = sorted(pool[:n], key=lambda t: t.index)
        meta = self._meta(sid)
        if not chosen:
            return ToolResult("read_raw", f"All requested turns of {sid} were already read.",
                              [sid], Layer.L3)
        seen.update(t.index for t in chosen)
        self.state.raw_turns_used += len(chosen)
        text = md.render_l3(meta, chosen).rstrip()
        ev = Evidence(session_id=sid, layer=Layer.L3, session_date=meta.session_date,
                      content=text, turn_indices=[t.index for t in chosen])
        added = self.state.add(ev, lines.raw_lines(sid, meta.session_date, chosen,
                                                   self.state.participants))
        self.state.mark_drilled(sid, Layer.L3)
        return ToolResult("read_raw", text, [sid], Layer.L3, int(added),
                          lexical.estimate_tokens(text))

    # -- profiles (a cross-session layer) ------------------------------------------------
    def _read_profile(self, question: Any = None) -> ToolResult:
        q = question if isinstance(question, str) and question.strip() else self.state.question
        with self.trace.memory_time():
            views = self.profiles.views(self.state.scope, everything=True)
            names = self.profiles.key_names(self.state.scope)
        found = profile_query.read(q, views, names, self.state.participants)
        s = self.state
        s.profile_reads += 1
        if q == s.question or s.profile is None:
            s.profile = found
        text = found.render()
        sessions = list(dict.fromkeys(src.session_id for h in found.hits for src in h.sources))
        who = found.target.name if found.target else "open"
        verdict = ("not stated" if found.abstain else
                   f"answer: {found.answer}" if found.answer else found.why or "context")
        return ToolResult("read_profile", text, sessions, None, 0,
                          lexical.estimate_tokens(text),
                          data={"profile": found},
                          summary=f"target={who}, attribute={found.attribute or '-'}, "
                                  f"{len(found.hits)} bullets; {verdict}")

    # -- reasoning tools ------------------------------------------------------------------
    def _interpret_dates(self, text: Any = None) -> ToolResult:
        src = text if isinstance(text, str) and text.strip() else self.state.question
        anchor = self.state.anchor
        found = find_relative_dates(src, anchor, calendar=False)
        for r in found:
            self.state.dates[r.phrase] = r.label
        asked = anchor.strftime("%Y-%m-%d") if anchor else "unknown"
        if not found:
            content = f"No relative time phrases found (question date: {asked})."
        else:
            content = f"Question date: {asked}\n" + "\n".join(
                f"- \"{r.phrase}\" means {r.label}" for r in found)
        return ToolResult("interpret_dates", content, data={"dates": dict(self.state.dates)},
                          summary=", ".join(f"{r.phrase} = {r.label}" for r in found) or
                          "no relative dates")

    def _decompose(self, question: Any = None) -> ToolResult:
        src = question if isinstance(question, str) and question.strip() else self.state.question
        parts = cue_rules.decompose(src)
        new = [p for p in parts if p not in self.state.subquestions]
        self.state.subquestions.extend(new)
        if len(parts) == 1:
            content = "The question is already focused; search for it as it is."
        else:
            content = "Sub-questions:\n" + "\n".join(f"{i}. {p}" for i, p in
                                                     enumerate(parts, 1))
        return ToolResult("decompose", content, data={"parts": parts},
                          summary=" | ".join(parts))

    def _reflect(self) -> ToolResult:
        s = self.state
        if s.reflections >= self.settings.max_reflections:
            raise ToolError(f"reflection budget used ({self.settings.max_reflections} rounds); "
                            "give your answer now")
        assert self.reflector is not None  # reflect is only enabled with a reflector
        grew = s.grew_since_reflection()
        first = s.size_at_reflection is None
        r = self.reflector.reflect(s, self.trace)
        s.reflections += 1
        s.size_at_reflection = s.size
        if r.sufficient:
            s.converged, s.stop_reason = True, "sufficient"
        elif not first and not grew:
            s.converged, s.stop_reason = True, "converged"
        fresh = [q for q in r.new_queries if q not in s.queries]
        payload = {"is_sufficient": r.sufficient, "items_found_so_far": r.items,
                   "potential_gaps": r.gaps, "new_queries": fresh,
                   "evidence_items": s.size, "converged": s.converged}
        if s.converged:
            payload["next"] = "answer now from the evidence gathered"
        verdict = "sufficient" if r.sufficient else ("converged" if s.converged else
                                                     f"{len(fresh)} new queries")
        return ToolResult("reflect", json.dumps(payload, ensure_ascii=False),
                          data={"reflection": r, "new_queries": fresh},
                          summary=f"{verdict}; |V|={s.size}")


def rank_turns(query: str, turns: Sequence[Turn]) -> list[Turn]:
    """Turns by BM25-like relevance to ``query`` within one session (best first, stable)."""
    q = set(lexical.terms(query))
    if not q or not turns:
        return list(turns)
    docs = [lexical.terms(t.text()) for t in turns]
    n = len(docs)
    df = {term: sum(1 for d in docs if term in d) for term in q}
    avg = sum(len(d) for d in docs) / n or 1.0
    scored = []
    for i, d in enumerate(docs):
        score = 0.0
        for term in q:
            tf = d.count(term)
            if tf:
                idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(d) / avg))
        scored.append((-score, i))
    scored.sort()
    return [turns[i] for _, i in scored]
