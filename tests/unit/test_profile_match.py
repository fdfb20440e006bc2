"""The bullet match of a route plan: a named entity's bullets closest to the question.

A hand-built graph and an encoder test double that maps words to fixed axes,
so the closeness of each bullet to the question is known in advance.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memstrata.profiles.graph import Bullet, Node, RelationGraph
from memstrata.profiles.model import Source
from memstrata.retrieval.graph_expand import (
    MATCH_MAX_SESSIONS,
    BulletVectors,
    expand,
    match_bullets,
)
from memstrata.route_plan import RoutePlan

#: The test double's axes: a text points along the axes of the words it holds.
AXES = {"activities": 0, "camping": 0, "pottery": 0, "hiking": 0, "painted": 0,
        "job": 1, "nurse": 1, "called": 2, "mel": 2, "cat": 3}


class AxisEncoderDouble:
    """Test double of an encoder: one axis per word family, counting its calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.full((len(texts), 4), 0.05, dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                if w in AXES:
                    out[i, AXES[w]] += 1.0
        return out


def bullet(text: str, *sessions: str) -> Bullet:
    return Bullet("fact", text, tuple(Source(s, 1) for s in sessions))


def graph() -> RelationGraph:
    mel = Node("name:mel", "Mel", "person", ("mel",), (), [
        bullet("went camping", "s1"),
        bullet("took a pottery class", "s2", "s3"),
        bullet("went hiking with pottery friends", "s3"),
        bullet("job nurse", "s4"),
        bullet("also called Mel", "s1", "s2", "s3", "s4", "s5"),  # in every session
    ])
    ann = Node("name:ann", "Ann", "person", ("ann",), (), [bullet("went camping", "s9")])
    return RelationGraph({"name:mel": mel, "name:ann": ann}, [])


def query(*words: str) -> np.ndarray:
    return AxisEncoderDouble()([" ".join(words)])[0]


def test_the_closest_bullets_of_the_named_entity_lift_their_sessions() -> None:
    vectors = BulletVectors(AxisEncoderDouble())
    lifted = match_bullets(graph(), ["name:mel"], query("activities"), vectors, keep=3)
    # Three pastime bullets are closest; s3 holds two of them, so it weighs most.
    assert lifted["s3"] == 1.0
    assert set(lifted) == {"s1", "s2", "s3"}
    assert 0.0 < lifted["s1"] < 1.0 and 0.0 < lifted["s2"] < 1.0
    assert "s9" not in lifted  # Ann is not named: her camping lends nothing


def test_a_bullet_from_many_sessions_and_unnamed_entities_lend_nothing() -> None:
    vectors = BulletVectors(AxisEncoderDouble())
    lifted = match_bullets(graph(), ["name:mel"], query("called", "mel"), vectors, keep=8)
    assert MATCH_MAX_SESSIONS < 5 and "s5" not in lifted  # "also called" is in 5 sessions
    assert match_bullets(graph(), ["name:zed"], query("activities"), vectors) == {}


def test_bullet_vectors_are_encoded_once_and_the_cache_is_bounded() -> None:
    encoder = AxisEncoderDouble()
    vectors = BulletVectors(encoder, size=2)
    first = vectors.get(["went camping", "job nurse"])
    again = vectors.get(["job nurse", "went camping"])
    assert len(encoder.calls) == 1  # the second read found both
    assert np.allclose(first[0], again[1]) and np.allclose(np.linalg.norm(first, axis=1), 1.0)
    vectors.get(["cat"])  # a third text: the least recently used one goes
    vectors.get(["job nurse"])
    vectors.get(["went camping"])
    assert encoder.calls[-1] == ["went camping"]


@pytest.mark.parametrize("match", [False, True])
def test_a_plan_that_only_matches_walks_no_edge(match: bool) -> None:
    plan = RoutePlan.for_question("What activities does Mel do?", None, enabled=False,
                                  match=match)
    assert not plan.expand and plan.active is match
    out = expand(graph(), plan.question, plan)
    assert out.sessions == {}  # the walk is the graph's, switched off
    assert (out.named == {"name:mel": "mel"}) is match
    assert plan.as_json()["match"] is match
