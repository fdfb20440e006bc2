"""A user's profiles in the doc store, updated session by session on the write path.

Stored per (tenant, user), as profile records of the doc store:

* one record per entity (its id is one of its keys: ``user``, ``name:ines``,
  ``rel:user:sister``...) holding its keys, every mention and fact of those
  keys with their source turns, and the routed ``view`` that
  ``memstrata profile`` prints;
* one index record (:data:`INDEX_ID`): which entity each key belongs to, the
  alias links, and which keys each session contributed to.

A write replaces the contribution of the sessions it carries and touches only
the entities those sessions (and the links between them) reach: a new turn
never rebuilds the other profiles. Because entities and views are pure
functions of the occurrences, updating session by session, in any order,
gives the same records as :meth:`ProfileBook.rebuild` over all sessions, and
removing a session leaves what its absence would have given.

With an LLM builder the sessions are read by the LLM profile extractor
(:mod:`memstrata.profiles.llm_extract`). Its read of a session is stored as
that session's share (the occurrences above) and noted in the index (``by``:
how each session was read, the digest of its content, why the rules read it
instead), so a session written again with the same content, or a rebuild, reuses
the stored read and never calls the model again; a delete removes it with the
rest of the session's share.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstrata.model import Scope, SessionMeta, Turn
from memstrata.profiles.llm_extract import (
    Extracted,
    RuleExtractor,
    SessionExtractor,
    content_digest,
)
from memstrata.profiles.model import (
    INDEX_ID,
    PROFILED_KINDS,
    RULES_VERSION,
    Fact,
    Link,
    Mention,
    SessionExtract,
    fold,
)
from memstrata.profiles.resolve import cluster, component
from memstrata.profiles.route import build_view
from memstrata.store.types import DocStore


_FIELDS = ("k", "slot", "v", "f", "a", "n", "kind", "by", "d", "said", "g", "sp")


def _order(d: dict[str, Any]) -> tuple[Any, ...]:
    """A total order of stored occurrences (every field they may hold takes part)."""
    src = d["src"]
    return (src["s"], src["t"], tuple(src.get("m") or ()),
            *(str(d.get(name) or "") for name in _FIELDS))


def _canonical(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Occurrences in one order whatever order they were added in."""
    return sorted(items, key=_order)


def _empty_index() -> dict[str, Any]:
    return {"v": RULES_VERSION, "sessions": {}, "links": [], "keys": {}}


@dataclass(frozen=True)
class SessionRead:
    """A session's occurrences, and how the LLM extractor read it (None: offline rules)."""

    extract: SessionExtract
    mark: dict[str, Any] | None = None


@dataclass
class ProfileWrite:
    """The profile records one write puts and drops (applied inside the write's transaction)."""

    scope: Scope
    put: dict[str, dict[str, Any]] = field(default_factory=dict)
    drop: set[str] = field(default_factory=set)
    #: How the write's facts were routed (change of ADD / UPDATE / IGNORE counts).
    ops: Counter[str] = field(default_factory=Counter)

    @property
    def empty(self) -> bool:
        return not self.put and not self.drop

    def apply(self, docs: DocStore) -> None:
        if not self.empty:
            docs.put_profiles(self.scope, self.put, drop=self.drop)


class ProfileBook:
    """Read and update the profiles of the doc store's users.

    ``extractor``: what reads a session (the rules by default; the LLM extractor
    when memory builds its layers with an LLM, see ``profile_extractor``).
    """

    def __init__(self, docs: DocStore, extractor: SessionExtractor | None = None) -> None:
        self.docs = docs
        self.extractor: SessionExtractor = extractor if extractor is not None else RuleExtractor()

    # -- writing ---------------------------------------------------------------
    def plan_sessions(self, items: Sequence[tuple[SessionMeta, Sequence[Turn]]], *,
                      held: Collection[tuple[Scope, str]] = ()) -> list[ProfileWrite]:
        """The profile writes for these sessions (each as a whole), one per scope.

        ``held``: (scope, session id) of open sessions a stream still holds (see
        :meth:`read_session`).
        """
        return self.plan_reads([(meta, self.read_session(
            meta, turns, held=(meta.scope, meta.session_id) in held)) for meta, turns in items])

    def read_session(self, meta: SessionMeta, turns: Sequence[Turn], *,
                     held: bool = False) -> SessionRead:
        """One session's occurrences, and how they were read (noted for the LLM only).

        Memory reads a session when it builds its windows (so an LLM read is booked
        with that session's construction cost) and plans the write at commit. With
        the LLM extractor, a session it read before with the same content is taken
        from its stored share instead of being read again; a ``held`` session (open,
        a stream still holds its last window) is read by the rules until it is let
        go, then the LLM reads the whole of it once: a stream does not pay one LLM
        read per message.
        """
        ex = self.extractor
        if not ex.uses_llm:
            return SessionRead(ex.extract(meta, turns).extract)
        sid = meta.session_id
        digest = content_digest(ex.version, meta, turns)
        index = self.docs.get_profiles(meta.scope, [INDEX_ID]).get(INDEX_ID)
        before = (index or {}).get("by", {}).get(sid)
        if index is not None and before is not None and before.get("d") == digest \
                and before.get("via") == "llm":
            return SessionRead(self._stored_share(meta.scope, sid, index), dict(before))
        got = (Extracted(RuleExtractor().extract(meta, turns).extract, "rules", "held")
               if held else ex.extract(meta, turns))
        mark: dict[str, Any] = {"via": got.via, "d": digest}
        if got.fallback is not None:
            mark["fallback"] = got.fallback
        return SessionRead(got.extract, mark)

    def plan_reads(self, reads: Sequence[tuple[SessionMeta, SessionRead]]) -> list[ProfileWrite]:
        """The profile writes for sessions already read (:meth:`read_session`), per scope."""
        by_scope: dict[Scope, list[tuple[str, SessionRead]]] = defaultdict(list)
        for meta, read in reads:
            by_scope[meta.scope].append((meta.session_id, read))
        writes = []
        for scope, items in by_scope.items():
            marks = {sid: r.mark for sid, r in items if r.mark is not None}
            writes.append(self.plan(scope, {sid: r.extract for sid, r in items}, reads=marks))
        return writes

    def _stored_share(self, scope: Scope, session_id: str,
                      index: Mapping[str, Any]) -> SessionExtract:
        """The occurrences a session contributed, as stored (its read is not repeated)."""
        keys = index["sessions"].get(session_id, ())
        eids = {index["keys"][k] for k in keys if k in index["keys"]}
        records = self.docs.get_profiles(scope, eids) if eids else {}
        out = SessionExtract(session_id)
        out.links = [x for x in map(Link.from_json, index["links"])
                     if x.source.session_id == session_id]
        for eid in sorted(records):
            r = records[eid]
            out.mentions += [m for m in map(Mention.from_json, r["mentions"])
                             if m.source.session_id == session_id]
            out.facts += [f for f in map(Fact.from_json, r["facts"])
                          if f.source.session_id == session_id]
        return out

    def forget_session(self, scope: Scope, session_id: str) -> ProfileWrite:
        """The write that removes one session's contribution from every profile."""
        return self.plan(scope, {session_id: SessionExtract(session_id)})

    def plan(self, scope: Scope, extracts: Mapping[str, SessionExtract], *,
             fresh: bool = False, reads: Mapping[str, dict[str, Any]] | None = None
             ) -> ProfileWrite:
        """Replace these sessions' occurrences and re-route the entities they reach.

        ``fresh``: start from nothing (a rebuild); else from the stored records.
        ``reads``: how the LLM extractor read each session (kept in the index as
        ``by``); a session of ``extracts`` without one loses its entry.
        """
        stored = {} if fresh else self.docs.get_profiles(scope, [INDEX_ID])
        index = stored.get(INDEX_ID) or _empty_index()
        sessions = set(extracts)
        old_links = [Link.from_json(x) for x in index["links"]]
        new_links = [link for e in extracts.values() for link in e.links]
        links = [x for x in old_links if x.source.session_id not in sessions] + new_links
        keymap: dict[str, str] = dict(index["keys"])
        touched: set[str] = set()
        for sid, e in extracts.items():
            touched |= set(index["sessions"].get(sid, ())) | e.keys()
        loaded, closure = self._reach(scope, touched, old_links + new_links, keymap, fresh)

        mentions = [m for d in loaded.values() for m in map(Mention.from_json, d["mentions"])
                    if m.source.session_id not in sessions]
        facts = [f for d in loaded.values() for f in map(Fact.from_json, d["facts"])
                 if f.source.session_id not in sessions]
        for e in extracts.values():
            mentions += e.mentions
            facts += e.facts
        near = [x for x in links if x.alias in closure or x.name in closure]
        live = ({m.key for m in mentions} | {f.key for f in facts}
                | {k for x in near for k in (x.alias, x.name)})
        assign = cluster(live, near)

        write = ProfileWrite(scope)
        records = _records(assign, mentions, facts)
        old_ops: Counter[str] = Counter()
        for d in loaded.values():
            old_ops.update(d["view"].get("ops", {}))
        for eid, record in records.items():
            write.ops.update(record["view"].get("ops", {}))
            if loaded.get(eid) != record:
                write.put[eid] = record
        write.ops.subtract(old_ops)
        write.drop = set(loaded) - set(records)

        for key in closure:
            keymap.pop(key, None)
        keymap.update(assign)
        index_sessions = dict(index["sessions"])
        for sid, e in extracts.items():
            keys = sorted(e.keys())
            if keys:
                index_sessions[sid] = keys
            else:
                index_sessions.pop(sid, None)
        new_index: dict[str, Any] = {
            "v": RULES_VERSION, "sessions": dict(sorted(index_sessions.items())),
            "links": _canonical(x.as_json() for x in links),
            "keys": dict(sorted(keymap.items()))}
        by = dict(index.get("by", {}))
        for sid in extracts:
            read = (reads or {}).get(sid)
            if read is not None:
                by[sid] = read
            else:
                by.pop(sid, None)
        if by:  # only an LLM extractor notes its reads: offline records stay as they were
            new_index["by"] = dict(sorted(by.items()))
        if new_index != stored.get(INDEX_ID):
            if new_index["sessions"] or new_index["keys"] or by:
                write.put[INDEX_ID] = new_index
            elif INDEX_ID in stored:
                write.drop.add(INDEX_ID)
        return write

    def _reach(self, scope: Scope, touched: set[str], links: list[Link],
               keymap: Mapping[str, str], fresh: bool
               ) -> tuple[dict[str, dict[str, Any]], set[str]]:
        """The stored entities the touched keys reach over links, and all their keys."""
        closure = set(touched)
        loaded: dict[str, dict[str, Any]] = {}
        while True:
            closure = component(closure, links)
            wanted = {keymap[k] for k in closure if k in keymap} - set(loaded)
            if fresh or not wanted:
                return loaded, closure
            found = self.docs.get_profiles(scope, wanted)
            for eid in wanted:
                record = found.get(eid)
                loaded[eid] = record if record is not None else {
                    "keys": [], "mentions": [], "facts": [], "view": {}}
                closure |= set(loaded[eid]["keys"])

    def rebuild(self, scope: Scope, sessions: Iterable[tuple[SessionMeta, Sequence[Turn]]]
                ) -> ProfileWrite:
        """The write that replaces every profile of ``scope`` with one built from ``sessions``.

        Sessions the LLM extractor read before with the same content keep that read.
        """
        read = {meta.session_id: self.read_session(meta, turns) for meta, turns in sessions}
        write = self.plan(scope, {sid: r.extract for sid, r in read.items()}, fresh=True,
                          reads={sid: r.mark for sid, r in read.items() if r.mark is not None})
        existing = set(self.docs.get_profiles(scope))
        write.drop = existing - set(write.put)
        return write

    # -- reading ---------------------------------------------------------------
    def views(self, scope: Scope, *, everything: bool = False) -> list[dict[str, Any]]:
        """Every entity's profile view (participants first, then by name); ``everything``
        includes names of unknown kind (mentioned, never described)."""
        records = self.docs.get_profiles(scope)
        out = [r["view"] for eid, r in records.items() if eid != INDEX_ID
               and (everything or r["view"].get("kind") in PROFILED_KINDS)]
        rank = {"user": 0, "assistant": 1}
        return sorted(out, key=lambda v: (rank.get(v["id"], 2), fold(v["name"]), v["id"]))

    def find(self, scope: Scope, query: str) -> list[dict[str, Any]]:
        """Entities ``query`` names: by id, name, alias or relation ("Inês", "my sister")."""
        q = fold(query)
        q_rel = q.removeprefix("my ").removeprefix("our ")
        views = self.views(scope, everything=True)
        exact = [v for v in views if q in (fold(v["id"]), fold(v["name"]))
                 or q in (fold(a) for a in v.get("aliases", ()))]
        if exact:
            return exact
        return [v for v in views if any(
            r.split(" of @")[0] == q_rel and r.endswith("@user") for r in v.get("relation", ()))
            or (q in ("me", "myself", "i", "user", "the user") and v["id"] == "user")]

    def reads(self, scope: Scope) -> dict[str, dict[str, Any]]:
        """How the LLM extractor read each session: ``via`` (``llm`` or ``rules``), the
        ``fallback`` reason when the rules stood in, ``d`` its content digest (empty
        when every session was read by the rules offline)."""
        index = self.docs.get_profiles(scope, [INDEX_ID]).get(INDEX_ID) or {}
        return dict(index.get("by", {}))

    def key_names(self, scope: Scope) -> dict[str, str]:
        """Display name of every key (to render ``@key`` references)."""
        records = self.docs.get_profiles(scope)
        index = records.get(INDEX_ID) or _empty_index()
        names = {eid: r["view"].get("name", eid) for eid, r in records.items() if eid != INDEX_ID}
        return {key: names.get(eid, key) for key, eid in index["keys"].items()}


def _records(assign: Mapping[str, str], mentions: Sequence[Mention],
             facts: Sequence[Fact]) -> dict[str, dict[str, Any]]:
    """One stored record per entity: its keys, occurrences and routed view."""
    keys_of: dict[str, list[str]] = defaultdict(list)
    for key, eid in assign.items():
        keys_of[eid].append(key)
    m_of: dict[str, list[Mention]] = defaultdict(list)
    f_of: dict[str, list[Fact]] = defaultdict(list)
    for m in mentions:
        m_of[assign[m.key]].append(m)
    for f in facts:
        f_of[assign[f.key]].append(f)
    out: dict[str, dict[str, Any]] = {}
    for eid, keys in keys_of.items():
        ms, fs = m_of.get(eid, []), f_of.get(eid, [])
        if not ms and not fs:
            continue
        m_json = _canonical(m.as_json() for m in ms)
        f_json = _canonical(f.as_json() for f in fs)
        out[eid] = {"id": eid, "keys": sorted(keys), "mentions": m_json, "facts": f_json,
                    "view": build_view(eid, sorted(keys), [Mention.from_json(d) for d in m_json],
                                       [Fact.from_json(d) for d in f_json])}
    return out
