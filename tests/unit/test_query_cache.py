"""The query-vector cache: per scope, exact, bounded; and phrase matching as before."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.embed.query_cache import QueryVectorCache, normalize_query
from memstrata.embed.types import Embedder
from memstrata.model import Scope
from memstrata.retrieval import fusion

ACME = Scope(tenant_id="acme", user_id="maya")
GLOBEX = Scope(tenant_id="globex", user_id="maya")


class ScopeBlindEncoder(Embedder):
    """Test double: a vector per text from a counter, so a reuse is visible.

    Two calls for the same text give different vectors; a cache that handed
    one scope's vector to another would be caught by comparing them.
    """

    name = "counter"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    @property
    def dim(self) -> int:
        return 4

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 4), dtype=np.float32)
        for i, t in enumerate(texts):
            self.encoded.append(t)
            out[i, len(self.encoded) % 4] = float(len(self.encoded))
        return out


def test_one_scope_never_gets_another_scopes_vector():
    enc = ScopeBlindEncoder()
    cache = QueryVectorCache(enc, 16)
    a = cache.embed(ACME, ["where did I go"])
    g = cache.embed(GLOBEX, ["where did I go"])
    assert enc.encoded == ["where did I go", "where did I go"]  # encoded once per scope
    assert not np.array_equal(a, g)
    # A hit returns the scope's own vector, whatever the spacing.
    np.testing.assert_array_equal(cache.embed(ACME, ["  where did  I go "]), a)
    np.testing.assert_array_equal(cache.embed(GLOBEX, ["where did I go"]), g)
    assert len(enc.encoded) == 2 and cache.hits == 2
    cache.forget(ACME)
    cache.embed(ACME, ["where did I go"])
    assert len(enc.encoded) == 3


def test_misses_are_encoded_in_one_call_in_order_and_the_cache_is_bounded():
    enc = ScopeBlindEncoder()
    cache = QueryVectorCache(enc, 2)
    first = cache.embed(ACME, ["a", "b"])
    out = cache.embed(ACME, ["b", "c", "b"])
    assert enc.encoded == ["a", "b", "c"]  # "b" hit, "c" once although repeated
    np.testing.assert_array_equal(out[0], first[1])
    np.testing.assert_array_equal(out[0], out[2])
    assert len(cache) == 2  # "a" went out first
    cache.embed(ACME, ["a"])
    assert enc.encoded[-1] == "a"
    with pytest.raises(ValueError, match="query cache size"):
        QueryVectorCache(enc, -1)


def test_size_zero_encodes_every_time():
    enc = ScopeBlindEncoder()
    cache = QueryVectorCache(enc, 0)
    cache.embed(ACME, ["x"])
    cache.embed(ACME, ["x"])
    assert enc.encoded == ["x", "x"] and len(cache) == 0


def test_cached_vectors_equal_the_encoders(embedder):
    cache = QueryVectorCache(embedder, 8)
    texts = ["What did Maya bake  for the party?", "half marathon training"]
    direct = embedder.embed_queries(texts)
    np.testing.assert_allclose(cache.embed(ACME, texts), direct, atol=1e-6)
    np.testing.assert_allclose(cache.embed(ACME, texts), direct, atol=1e-6)  # hits
    assert normalize_query(" a \t b\n") == "a b"


words = st.sampled_from(["support", "group", "lgbtq", "caroline", "the", "hike", "may",
                         "2023", "Support Group", "", "new-york", "don't"])


@given(st.lists(words, max_size=8), st.lists(st.lists(words, max_size=5), max_size=6))
def test_phrase_matches_counts_what_keyword_matches_counts(query, units):
    qt = fusion.tokens(" ".join(query))
    flat = [kw for kws in units for kw in kws]
    lists = [fusion.phrases(tuple(kws)) for kws in units]
    assert fusion.phrase_matches(qt, lists) == fusion.keyword_matches(qt, flat)
