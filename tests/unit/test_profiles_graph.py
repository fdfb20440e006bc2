"""The relation graph derived from the profiles, and the route plan that decides to walk it.

Built from the profiles of examples/sample_turns.jsonl in a SQLite doc store
(no encoder, no search store): typed edges with their source turns, the user
and the assistant as nodes, and a deleted session's edges gone with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli.eval_cmd import eval_app
from memstrata.config import Settings
from memstrata.controller.config import ABLATIONS, ControllerSettings
from memstrata.evidence.cues import detect_cues
from memstrata.ingest.formats import read_file
from memstrata.model import Scope
from memstrata.profiles.book import ProfileBook
from memstrata.profiles.graph import EDGE_TYPES, Edge, RelationGraph, load_graph, named_entities
from memstrata.route_plan import RoutePlan
from memstrata.store.factory import open_doc_store
from memstrata.store.types import DocStore

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample_turns.jsonl"
MAYA = Scope(tenant_id="acme", user_id="maya")
TRIP = "2024-03-02-trip"
ADOPTION = "2024-05-20-after-trip"


@pytest.fixture
def docs(tmp_path: Path) -> Iterator[DocStore]:
    store = open_doc_store(Settings(data_dir=tmp_path))
    book = ProfileBook(store)
    sessions = [s for s in read_file(SAMPLE).sessions if s.scope == MAYA]
    book.rebuild(MAYA, [(s.meta, s.turns) for s in sessions]).apply(store)
    yield store
    store.close()


def edge(graph: RelationGraph, src: str, dst: str, kind: str) -> Edge:
    found = [e for e in graph.edges if (e.src, e.dst, e.type) == (src, dst, kind)]
    assert len(found) == 1, [e.as_json() for e in graph.edges if e.src == src or e.dst == src]
    return found[0]


def test_edges_are_typed_with_a_confidence_and_their_source_turns(docs: DocStore) -> None:
    graph = load_graph(ProfileBook(docs), MAYA)
    assert {"user", "assistant", "name:ines", "name:sardinha"} <= set(graph.nodes)
    sister = edge(graph, "user", "name:ines", "relation")
    assert sister.label == "sister"
    assert [(s.session_id, s.turn) for s in sister.sources] == [(TRIP, 1)]
    cat = edge(graph, "user", "name:sardinha", "ownership")  # a pet is owned
    assert cat.label == "cat" and {s.session_id for s in cat.sources} == {ADOPTION}
    ramiro = edge(graph, "assistant", "name:cervejaria ramiro", "recommendation")
    assert {(s.session_id, s.turn) for s in ramiro.sources} == {(TRIP, 2), (TRIP, 3)}
    # Two turns state it: surer than one.
    assert ramiro.confidence > edge(graph, "assistant", "name:sintra", "recommendation").confidence
    lisbon = edge(graph, "user", "name:lisbon", "place")  # "a trip to Lisbon in May"
    assert lisbon.confidence < sister.confidence  # read from free text
    for e in graph.edges:
        assert e.type in EDGE_TYPES and 0.0 < e.confidence < 1.0 and e.sources


def test_a_deleted_sessions_edges_are_gone(docs: DocStore) -> None:
    book = ProfileBook(docs)
    book.forget_session(MAYA, TRIP).apply(docs)
    graph = load_graph(book, MAYA)
    assert all(s.session_id != TRIP for e in graph.edges for s in e.sources)
    assert not [e for e in graph.edges if e.type == "recommendation"]  # all said in the trip
    assert "name:cervejaria ramiro" not in graph.nodes or not graph.neighbours(
        "name:cervejaria ramiro")
    edge(graph, "user", "name:sardinha", "ownership")  # the other sessions' edges stay
    assert {"user", "assistant"} <= set(graph.nodes)


def test_the_question_names_entities_by_name_alias_and_relation(docs: DocStore) -> None:
    graph = load_graph(ProfileBook(docs), MAYA)
    assert named_entities(graph, "What does my sister like to eat?") == {"name:ines": "my sister"}
    assert named_entities(graph, "Does Inês like Ramiro?") == {
        "name:ines": "ines", "name:cervejaria ramiro": "ramiro"}
    assert named_entities(graph, "What does my cat eat?") == {"name:sardinha": "my cat"}
    assert named_entities(graph, "What did I eat in Berlin yesterday?").keys() <= {"name:berlin"}


def test_a_walk_decays_per_hop_and_stops_at_the_participants(docs: DocStore) -> None:
    graph = load_graph(ProfileBook(docs), MAYA)
    reached = {r.entity: r for r in graph.expand({"name:cervejaria ramiro": 1.0}, hops=2)}
    assistant = reached["assistant"]
    assert assistant.hops == 1 and assistant.via is not None
    assert assistant.weight == pytest.approx(assistant.via.confidence * 0.5)
    # The assistant is a hub: what else it recommended is not reached through it.
    assert "name:sintra" not in reached
    two = {r.entity: r for r in graph.expand({"name:ines": 1.0}, hops=2)}
    assert all(r.hops <= 2 and r.weight <= 1.0 for r in two.values())


@pytest.mark.parametrize("question, expands", [
    ("What does my sister's cat eat?", True),           # a chain of possessives
    ("Where does the person who recommended Ramiro live?", True),
    ("What are the names of Audrey's dogs?", True),
    ("What is the relationship between Ana and Ben?", True),  # the relation cue
    ("What activities does Melanie like?", True),       # the attribute cue
    ("When did I start running?", False),
    ("What did the assistant recommend in Lisbon?", False),
    ("How old is Maya?", False),
])
def test_the_route_plan_expands_for_relation_and_multi_hop_cues(question: str,
                                                                 expands: bool) -> None:
    plan = RoutePlan.for_question(question, detect_cues(question))
    assert plan.expand is expands, plan
    assert not RoutePlan.for_question(question, detect_cues(question), enabled=False).expand


def test_graph_is_an_ablation_of_the_controller_settings() -> None:
    assert ABLATIONS["graph"] == "use_graph"
    assert not ControllerSettings().use_graph  # opt-in (no gain beyond noise measured)
    assert ControllerSettings(use_graph=True).use_graph
    assert "graph" not in ControllerSettings().ablations  # opt-in: off is not an ablation
    off = ControllerSettings(use_graph=True).without(["graph"])
    assert not off.use_graph
    assert ABLATIONS["profile_match"] == "use_profile_match"
    assert not ControllerSettings().use_profile_match  # opt-in (not beyond noise everywhere)
    assert not ControllerSettings(use_profile_match=True).without(
        ["profile_match"]).use_profile_match


def test_eval_retrieval_takes_without_graph_and_names_an_unknown_part(tmp_path: Path) -> None:
    import memstrata.cli.eval_qa  # noqa: F401 - registers `eval qa`: eval is a group of two

    result = CliRunner().invoke(eval_app, ["retrieval", "-d", str(tmp_path / "x.json"),
                                           "-f", "locomo", "--without", "profiles"])
    assert result.exit_code == 2 and "--without" in result.output


class _Stopped(Exception):
    """Raised by the evaluate test double once it has seen its arguments."""


@pytest.mark.parametrize("env, without, expected", [
    ({}, [], (False, False)),                                  # the answer path's defaults
    ({"USE_GRAPH": "true"}, [], (True, False)),                # opted in: measured with it
    ({"USE_GRAPH": "true"}, ["graph"], (False, False)),        # the ablation wins
    ({"USE_PROFILE_MATCH": "true"}, [], (False, True)),
    ({"USE_GRAPH": "true", "USE_PROFILE_MATCH": "true"}, ["profile_match"], (True, False)),
])
def test_eval_retrieval_expands_and_matches_only_when_answers_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
        without: list[str], expected: tuple[bool, bool]) -> None:
    import memstrata.cli
    import memstrata.cli.eval_qa  # registers `eval qa`: eval is a group of two
    import memstrata.eval.retrieval as retrieval

    seen: dict[str, bool] = {}

    def evaluate_double(*args: object, graph: bool, match: bool = False,
                        **kwargs: object) -> None:
        seen.update(graph=graph, match=match)
        raise _Stopped

    for name in ("USE_GRAPH", "USE_PROFILE_MATCH"):
        monkeypatch.delenv(f"MEMSTRATA_CONTROLLER_{name}", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(f"MEMSTRATA_CONTROLLER_{name}", value)
    monkeypatch.setenv("MEMSTRATA_DATA_DIR", str(tmp_path / "dd"))
    monkeypatch.setattr(retrieval, "evaluate", evaluate_double)
    monkeypatch.setattr(memstrata.cli, "_loaded", {})  # settings as this test's variables say
    mini = Path(__file__).resolve().parents[1] / "fixtures" / "longmemeval_mini.json"
    args = ["retrieval", "-d", str(mini), "-f", "longmemeval", "-o", str(tmp_path / "r.json")]
    for w in without:
        args += ["--without", w]
    result = CliRunner().invoke(eval_app, args)
    assert isinstance(result.exception, _Stopped), result.output
    assert (seen["graph"], seen["match"]) == expected
