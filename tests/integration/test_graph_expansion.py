"""Multi-hop expansion through the relation graph, in Memory's search path.

On turns written here: "What does my sister's cat eat?" needs two facts from
two sessions (the sister has a cat named Mochi; Mochi eats tuna). The flat
retriever ranks the session about Mochi's food last (it names neither the
sister nor the cat); the walk from "my sister" to her cat lifts it into the top
5, and the ``graph`` ablation does not. Questions without a relation,
attribute, multi-hop or chain cue are ranked exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.evidence.cues import detect_cues
from memstrata.ingest.formats import read_file
from memstrata.llm.extractive import ExtractiveBuilder
from memstrata.memory import Memory
from memstrata.model import Message, Scope, Session, SessionMeta, Turn
from memstrata.route_plan import RoutePlan
from memstrata.store.factory import open_doc_store, open_lexical_store, open_vector_store

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_turns.jsonl"
ME = Scope(tenant_id="t", user_id="u")
MAYA = Scope(tenant_id="acme", user_id="maya")
TWO_HOP = "What does my sister's cat eat?"


def s(sid: str, day: int, *texts: tuple[str, str]) -> Session:
    turns = [Turn(index=i, messages=[Message(role="user", content=u),
                                     Message(role="assistant", content=a)])
             for i, (u, a) in enumerate(texts, start=1)]
    return Session(meta=SessionMeta(scope=ME, session_id=sid,
                                    session_date=datetime(2024, 1, day)), turns=turns)


def own_sessions() -> list[Session]:
    """The two hops in two sessions, and sessions that share the question's words."""
    return [
        s("s01-adoption", 2, ("My sister Inês adopted a cat named Mochi.",
                              "How lovely, congratulations to her!")),
        s("s02-food", 5, ("Mochi eats tuna.", "Tuna is a classic choice."),
          ("Mochi also sleeps all afternoon on the sofa.", "Sounds like a happy life.")),
        s("s03", 6, ("My sister and I went out to eat ramen downtown.",
                     "Ramen is perfect in winter.")),
        s("s04", 7, ("My sister eats sushi every Friday.", "Sushi Fridays sound great.")),
        s("s05", 8, ("There is a cat cafe near my sister's flat where we eat cake.",
                     "Cat cafes are fun.")),
        s("s06", 9, ("The neighbour's cat eats grass in our garden.", "Cats do that sometimes.")),
        s("s07", 10, ("I ate pizza with my sister after work.", "Pizza with family is the best.")),
        s("s08", 11, ("My sister's kids eat a lot of pasta.", "Kids love pasta.")),
        s("s10", 13, ("I should eat more vegetables, my sister says.",
                      "Vegetables are good for you.")),
    ]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Memory]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("graph"))
    with Memory(settings, ExtractiveBuilder(), embedder, open_vector_store(settings, embedder.dim),
                open_lexical_store(settings), open_doc_store(settings)) as m:
        m.ingest(own_sessions() + list(read_file(SAMPLE).sessions))
        m.flush()
        yield m


def ranked(m: Memory, scope: Scope, question: str, *, graph: bool | None) -> list[str]:
    route = (None if graph is None else
             RoutePlan.for_question(question, detect_cues(question), enabled=graph))
    return [sid for sid, _ in m.retriever.rank(scope, [question], route=route).sessions]


def test_a_two_hop_question_ranks_the_second_hop_in_the_top_5(memory: Memory) -> None:
    flat = ranked(memory, ME, TWO_HOP, graph=None)
    assert "s02-food" not in flat[:5]
    assert ranked(memory, ME, TWO_HOP, graph=False) == flat  # --without graph
    expanded = ranked(memory, ME, TWO_HOP, graph=True)
    assert "s02-food" in expanded[:5], expanded
    assert "s01-adoption" in expanded[:5]  # the first hop stays
    hits = memory.search(ME, [TWO_HOP], top_k=5,
                         route=RoutePlan.for_question(TWO_HOP, detect_cues(TWO_HOP)))
    assert "s02-food" in [h.session_id for h in hits]


def test_the_expansion_is_in_the_ranking_with_entities_hops_and_weights(memory: Memory) -> None:
    route = RoutePlan.for_question(TWO_HOP, detect_cues(TWO_HOP))
    expansion = memory.retriever.rank(ME, [TWO_HOP], route=route).expansion
    assert expansion is not None
    trace = expansion.as_json()
    assert trace["plan"]["reasons"] == ["chain"] and trace["boost"] > 0
    assert trace["named"] == {"name:ines": "my sister", "name:mochi": "my sister's cat"}
    by_id = {r["id"]: r for r in trace["reached"]}
    assert by_id["name:mochi"]["weight"] == 1.0
    assert by_id["name:ines"]["weight"] < 1.0  # the path to the cat, not what is asked
    assert trace["sessions"]["s02-food"] == 1.0  # "eats tuna", Mochi's bullet
    assert trace["sessions"]["s01-adoption"] > 0  # the turn that links the sister and the cat


@pytest.mark.parametrize("scope, question", [
    (ME, "What does Mochi eat?"),
    (ME, "When did I eat pizza?"),
    (ME, "Where did we eat ramen?"),
    (MAYA, "When did I start running?"),
    (MAYA, "Which restaurant did the assistant recommend in Lisbon?"),
    (MAYA, "How old is my knee injury?"),
])
def test_questions_without_relation_cues_are_ranked_exactly_as_before(
        memory: Memory, scope: Scope, question: str) -> None:
    route = RoutePlan.for_question(question, detect_cues(question))
    assert not route.expand, route
    flat = memory.retriever.rank(scope, [question])
    planned = memory.retriever.rank(scope, [question], route=route)
    assert planned.sessions == flat.sessions and planned.expansion is None


def test_a_match_lifts_the_named_entitys_closest_bullets_sessions(memory: Memory) -> None:
    question = "What food does Mochi have?"  # no relation, attribute or chain cue
    plan = RoutePlan.for_question(question, detect_cues(question), enabled=False, match=True)
    assert not plan.expand and plan.match
    flat = memory.retriever.rank(ME, [question])
    matched = memory.retriever.rank(ME, [question], route=plan)
    expansion = matched.expansion
    assert expansion is not None and expansion.named == {"name:mochi": "mochi"}
    assert expansion.sessions == {}  # no walk: the graph ablation is off
    # Mochi's bullets come from the adoption and the food sessions only.
    assert set(expansion.matched) <= {"s01-adoption", "s02-food"}
    assert max(expansion.matched.values()) == 1.0
    trace = expansion.as_json()
    assert trace["match_boost"] > 0 and set(trace["matched"]) == set(expansion.matched)
    # Sessions the match did not lift keep their order and scores.
    untouched = [(sid, v) for sid, v in flat.sessions if sid not in expansion.matched]
    assert [(sid, v) for sid, v in matched.sessions if sid not in expansion.matched] == untouched
    lifted = dict(matched.sessions)
    before = dict(flat.sessions)
    assert all(lifted[sid] > before.get(sid, 0.0) for sid in expansion.matched)


@pytest.mark.parametrize("match", [False, True])
def test_the_controller_matches_only_when_its_setting_says(memory: Memory, match: bool) -> None:
    from memstrata.controller.config import ControllerSettings
    from memstrata.controller.run import Controller

    settings = ControllerSettings(policy="rules", use_profile_match=match)
    answer = Controller.for_memory(memory, settings).answer(ME, "What food does Mochi have?")
    notes = [st.note or "" for st in answer.steps if st.tool == "search"]
    assert notes
    assert any("profile match:" in n for n in notes) is match
    assert not any("graph:" in n for n in notes)  # no walk: use_graph is off
