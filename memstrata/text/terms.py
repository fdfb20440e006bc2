"""Stemmed terms, analysed exactly as the embedded BM25 index analyses text.

The retriever compares a question's content terms with the terms of BM25's
best hit (see :func:`memstrata.retrieval.fusion.coverage`); both sides must go
through the same chain as the index (simple tokenizer, long tokens dropped,
lower case, English Snowball stemmer) or "traveled" would never meet "travel".
"""

from __future__ import annotations

import re
from functools import lru_cache

from memstrata.memo import memo

import tantivy as tv

from memstrata.text.keywords import is_stop

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def stem_analyzer() -> tv.TextAnalyzer:
    """The ``en_stem`` chain of the tantivy index, usable on any text."""
    return (
        tv.TextAnalyzerBuilder(tv.Tokenizer.simple())
        .filter(tv.Filter.remove_long(40))
        .filter(tv.Filter.lowercase())
        .filter(tv.Filter.stemmer("english"))
        .build()
    )


@lru_cache(maxsize=1)
def _analyzer() -> tv.TextAnalyzer:
    return stem_analyzer()


def stems(text: str) -> set[str]:
    """Every stemmed term of ``text``."""
    return set(_analyzer().analyze(text))


def content_stems(text: str) -> set[str]:
    """Stemmed terms of the words that carry meaning (function words and filler left out)."""
    out: set[str] = set()
    for word in _WORD.findall(text):
        lower = word.lower()
        if not is_stop(lower):
            out.update(_stem_word(lower))
    return out


@memo(65536)
def _stem_word(lower: str) -> tuple[str, ...]:
    return tuple(_analyzer().analyze(lower))


def stem_word(word: str) -> tuple[str, ...]:
    """The index's terms for one word (usually one stem; "don't" gives two)."""
    return _stem_word(word.lower())
