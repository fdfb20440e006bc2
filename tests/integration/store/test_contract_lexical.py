"""Contract of :class:`LexicalStore`, run against every implementation.

Proves, for tantivy and OpenSearch: a written document is found by its words;
re-upserting is idempotent and replaces text by id; a better BM25 match ranks
first; English stemming makes "running" find "runs"; the separate keywords
field is searched; ``session_ids`` restricts results; ``delete`` removes
exactly one session or one scope; ``count`` is per scope or global; query
syntax characters are taken literally and never raise; a query without words
returns nothing; data survives close/reopen; a repeated search sees every write since.
"""

from __future__ import annotations

import pytest

from memstrata.store.types import LexicalStore
from tests.integration.store.support import ALICE, BOB, Backend, ldoc, unit_id


def _write(store: LexicalStore, docs: list) -> None:
    store.upsert(docs)
    store.flush()


def test_upsert_then_search_finds_the_document(lexical_store: LexicalStore) -> None:
    _write(
        lexical_store,
        [
            ldoc(ALICE, "s1", 1, "Alice adopted a golden retriever puppy"),
            ldoc(ALICE, "s1", 2, "They talked about the weather in Lisbon"),
        ],
    )

    hits = lexical_store.search(ALICE, "retriever", limit=5)

    assert [(h.unit_id, h.session_id) for h in hits] == [(unit_id(ALICE, "s1", 1), "s1")]
    assert hits[0].score > 0


def test_reupsert_is_idempotent_and_replaces_text(lexical_store: LexicalStore) -> None:
    docs = [ldoc(ALICE, "s1", t, f"note number {t} about gardening") for t in (1, 2, 3)]
    _write(lexical_store, docs)
    _write(lexical_store, docs)
    assert lexical_store.count(ALICE) == 3
    assert len(lexical_store.search(ALICE, "gardening", limit=10)) == 3

    _write(lexical_store, [ldoc(ALICE, "s1", 1, "note about astronomy")])
    assert lexical_store.count(ALICE) == 3
    assert {h.unit_id for h in lexical_store.search(ALICE, "gardening", limit=10)} == {
        unit_id(ALICE, "s1", 2),
        unit_id(ALICE, "s1", 3),
    }
    assert [h.unit_id for h in lexical_store.search(ALICE, "astronomy", limit=10)] == [
        unit_id(ALICE, "s1", 1)
    ]


def test_better_match_ranks_first(lexical_store: LexicalStore) -> None:
    _write(
        lexical_store,
        [
            ldoc(ALICE, "s1", 1, "a trip to the mountains"),
            ldoc(ALICE, "s2", 1, "a hiking trip to the alps with a hiking club"),
            ldoc(ALICE, "s3", 1, "baking bread on sunday"),
        ],
    )

    hits = lexical_store.search(ALICE, "hiking trip", limit=10)

    assert [h.session_id for h in hits] == ["s2", "s1"]
    assert hits[0].score > hits[1].score
    assert len(lexical_store.search(ALICE, "hiking trip", limit=1)) == 1
    assert lexical_store.search(ALICE, "hiking trip", limit=0) == []


def test_english_stemming_matches_inflections(lexical_store: LexicalStore) -> None:
    _write(
        lexical_store,
        [
            ldoc(ALICE, "s1", 1, "She runs every morning before work"),
            ldoc(ALICE, "s2", 1, "He bought new shoes"),
        ],
    )

    assert [h.session_id for h in lexical_store.search(ALICE, "running", limit=5)] == ["s1"]
    assert [h.session_id for h in lexical_store.search(ALICE, "RUN", limit=5)] == ["s1"]
    assert [h.session_id for h in lexical_store.search(ALICE, "shoe", limit=5)] == ["s2"]


def test_keywords_field_is_searched(lexical_store: LexicalStore) -> None:
    _write(
        lexical_store,
        [
            ldoc(ALICE, "s1", 1, "they discussed the upcoming race", ["marathon", "Boston"]),
            ldoc(ALICE, "s2", 1, "nothing relevant here"),
        ],
    )

    assert [h.session_id for h in lexical_store.search(ALICE, "boston marathons", limit=5)] == [
        "s1"
    ]


def test_session_ids_restrict_the_search(lexical_store: LexicalStore) -> None:
    _write(lexical_store, [ldoc(ALICE, s, 1, "concert tickets") for s in ("s1", "s2", "s3")])

    hits = lexical_store.search(ALICE, "concert", limit=10, session_ids={"s1", "s3"})
    assert sorted(h.session_id for h in hits) == ["s1", "s3"]
    assert lexical_store.search(ALICE, "concert", limit=10, session_ids=[]) == []
    assert lexical_store.search(ALICE, "concert", limit=10, session_ids=["nope"]) == []


def test_delete_session_then_scope(lexical_store: LexicalStore) -> None:
    _write(
        lexical_store,
        [ldoc(sc, s, 1, "piano lessons") for sc in (ALICE, BOB) for s in ("s1", "s2")],
    )
    assert (lexical_store.count(ALICE), lexical_store.count(BOB), lexical_store.count()) == (
        2,
        2,
        4,
    )

    lexical_store.delete(ALICE, "s1")
    lexical_store.flush()
    assert [h.session_id for h in lexical_store.search(ALICE, "piano", limit=10)] == ["s2"]
    assert lexical_store.count(BOB) == 2

    lexical_store.delete(ALICE)
    lexical_store.flush()
    assert lexical_store.count(ALICE) == 0
    assert lexical_store.search(ALICE, "piano", limit=10) == []
    assert lexical_store.count(BOB) == 2
    assert lexical_store.count() == 2


def test_delete_removes_writes_not_yet_flushed(lexical_store: LexicalStore) -> None:
    lexical_store.upsert([ldoc(ALICE, "s1", 1, "secret diary")])
    lexical_store.delete(ALICE)
    lexical_store.flush()
    assert lexical_store.count() == 0
    assert lexical_store.search(ALICE, "diary", limit=5) == []


@pytest.mark.parametrize(
    "query",
    [
        'what did I say about "pizza" (last week)?',
        "pizza AND OR NOT",
        "text:pizza keywords:*",
        "pizza~2 ^3 [1 TO 5] {a TO b}",
        "pizza + - && || ! \\ / ' ` @ # $ % &",
        "pizza* pi?za",
        'unbalanced "quote pizza',
        "pizza))) (((",
        "ピザ pizza ünïcode",
    ],
)
def test_query_syntax_is_taken_literally(lexical_store: LexicalStore, query: str) -> None:
    _write(lexical_store, [ldoc(ALICE, "s1", 1, "We ordered pizza on Friday")])

    hits = lexical_store.search(ALICE, query, limit=5)

    assert [h.session_id for h in hits] == ["s1"]


@pytest.mark.parametrize("query", ["", "   ", "?!*()\"':-", "\n\t"])
def test_query_without_words_returns_nothing(lexical_store: LexicalStore, query: str) -> None:
    _write(lexical_store, [ldoc(ALICE, "s1", 1, "anything at all")])
    assert lexical_store.search(ALICE, query, limit=5) == []


def test_writes_are_visible_without_flush(lexical_backend: Backend[LexicalStore]) -> None:
    if not lexical_backend.immediate:
        pytest.skip(f"{lexical_backend.name} makes writes searchable on flush()")
    store = lexical_backend.open()
    store.upsert([ldoc(ALICE, "s1", 1, "violin recital")])
    assert store.count(ALICE) == 1
    assert [h.session_id for h in store.search(ALICE, "violin", limit=5)] == ["s1"]


def test_reopen_keeps_documents(lexical_backend: Backend[LexicalStore]) -> None:
    first = lexical_backend.open()
    _write(first, [ldoc(ALICE, "s1", 1, "tulips in the garden", ["flowers"])])
    first.close()

    again = lexical_backend.open()
    assert again.count(ALICE) == 1
    assert [h.session_id for h in again.search(ALICE, "flower", limit=5)] == ["s1"]


def test_count_session_counts_one_session_of_one_scope(lexical_store: LexicalStore) -> None:
    _write(lexical_store, [ldoc(ALICE, "s1", 1, "piano"), ldoc(ALICE, "s1", 2, "violin"),
                           ldoc(ALICE, "s2", 1, "cello"), ldoc(BOB, "s1", 1, "piano")])
    counts = [lexical_store.count_session(sc, s)
              for sc, s in ((ALICE, "s1"), (ALICE, "s2"), (BOB, "s1"), (ALICE, "s9"))]
    assert counts == [2, 1, 1, 0]


def test_a_repeated_search_sees_what_was_written_since(lexical_store: LexicalStore) -> None:
    """Nothing read for an earlier search (tantivy keeps ids per searcher) outlives a write."""
    _write(lexical_store, [ldoc(ALICE, "s1", 1, "the orchid needs repotting")])
    assert [h.session_id for h in lexical_store.search(ALICE, "orchid", limit=5)] == ["s1"]
    lexical_store.delete(ALICE)
    # A fresh document where the deleted one was: the same place in a new segment list.
    _write(lexical_store, [ldoc(ALICE, "s2", 7, "an orchid on the windowsill")])
    hits = lexical_store.search(ALICE, "orchid", limit=5)
    assert [(h.unit_id, h.session_id) for h in hits] == [(unit_id(ALICE, "s2", 7), "s2")]
