"""Keywords and topic tags for one turn, without a language model.

Keywords feed the BM25 keyword field and the dense index text, so they should
cover the distinctive words of a turn: names, objects, activities, places,
numbers and dates. They are ranked with YAKE's statistics (Campos et al.,
2020): a term scores well when it is capitalised, appears early, is frequent
relative to the other terms, keeps company with few different neighbours and
is confined to few sentences; an n-gram combines the scores of its words.

Two scorers compute those statistics. ``fast`` (the default) is a compact
re-implementation here, about ten times quicker than the ``yake`` package on
chat-sized texts (the package builds a networkx graph per call, about 45 us a
word; ingestion has about 1.5 ms a turn). ``yake`` calls the package itself,
for comparison or for long texts. Both then go through the same selection:
names, numbers with units and resolved dates are added outright, and a phrase
is dropped when the phrases already picked cover all its words, so eight
slots hold eight different things rather than "support", "support group",
"LGBTQ support".

Tags come from the topic lexicon in :mod:`memstrata.text.lexicon`.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Collection, Iterable, Sequence
from functools import cached_property

from memstrata.memo import memo
from typing import Any, Literal

from memstrata.text.lexicon import FILLER, STOPWORDS, TOPIC_ORDER, WEAK_TAGS, topics_of

Backend = Literal["fast", "yake"]

_TOKEN = re.compile(r"[$€£]?\d[\d,.:]*(?:%|[A-Za-z]+)?|[A-Za-z](?:[A-Za-z'\-]*[A-Za-z])?")
_CHUNK = re.compile(r"[,;:()\[\]\"“”!?.…/]+|\s[-–—&+]+\s|\s&|&\s")
_NUMBER_UNIT = re.compile(
    r"(?<![\w$€£])(?:[$€£]\s?\d[\d,.]*(?:\s?(?:k|m|million|billion|thousand)\b)?"
    r"|\d[\d,.]*\s?(?:%|percent\b)"
    r"|\d[\d,.]*\s+[A-Za-z][a-z]+|(?:19|20)\d\d\b)"
)
# "double quotes" anywhere, or 'single quotes' that do not look like apostrophes.
_QUOTED = re.compile(r"[\"“]([^\"“”]{2,60})[\"”]|(?<![\w])'([^']{2,60})'(?![\w])")
_NOT_UNITS = STOPWORDS | FILLER | {"am", "pm", "o'clock"}
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may "
    "june july august september october november december".split()
)


@memo(65536)
def normalize(word: str) -> str:
    """The key a word is counted under: lower case, no possessive, no plain plural."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return w


@memo(65536)
def is_stop(lower: str) -> bool:
    """Never a keyword on its own: function words, filler, contractions, single letters."""
    if lower in STOPWORDS or lower in FILLER or len(lower) < 2:
        return True
    return "'" in lower and not lower.endswith("'s")


class _Term:
    __slots__ = ("tf", "caps", "sentences", "positions", "left", "right")

    def __init__(self) -> None:
        self.tf = 0
        self.caps = 0
        self.sentences: set[int] = set()
        self.positions: list[int] = []
        self.left: dict[str, int] = {}
        self.right: dict[str, int] = {}


def _yake_statistics(
    sentences: Sequence[str], positions: Sequence[int], max_ngram: int
) -> tuple[list[tuple[str, tuple[str, ...], float]], list[tuple[str, str]]]:
    """YAKE scores of candidate phrases (lower is better) and the capitalised runs.

    Returns ``(candidates, names)``: candidates as ``(surface, keys, score)`` in
    first-seen order, names as ``(surface, key)`` for runs of capitalised
    non-initial words and acronyms.
    """
    terms: dict[str, _Term] = {}
    chunks: list[list[tuple[str, str, bool, bool] | None]] = []
    names: list[tuple[str, str]] = []
    for si, sentence in enumerate(sentences):
        pos = positions[si]
        first = True
        for chunk in _CHUNK.split(sentence):
            seq: list[tuple[str, str, bool, bool] | None] = []
            prev: str | None = None
            run: list[str] = []
            for tok in _TOKEN.findall(chunk):
                lower = tok.lower()
                capital = tok[0].isupper() and (not first or (tok.isupper() and len(tok) > 1))
                capital = capital and tok != "I" and not lower.startswith("i'")
                first = False
                if tok[0].isdigit() or tok[0] in "$€£":
                    seq.append(None)
                    prev = None
                    run = _flush(run, names)
                    continue
                stop = is_stop(lower)
                key = normalize(tok)
                term = terms.get(key)
                if term is None:
                    term = terms[key] = _Term()
                term.tf += 1
                term.caps += capital
                term.sentences.add(si)
                term.positions.append(pos)
                if prev is not None:
                    right = terms[prev].right
                    right[key] = right.get(key, 0) + 1
                    term.left[prev] = term.left.get(prev, 0) + 1
                prev = key
                seq.append((key, tok, stop, capital))
                if capital and not stop:
                    run.append(tok)
                else:
                    run = _flush(run, names)
            _flush(run, names)
            chunks.append(seq)

    content = [t for k, t in terms.items() if not is_stop(k)]
    if not content:
        return [], names
    tfs = [t.tf for t in content]
    mean = sum(tfs) / len(tfs)
    std = math.sqrt(sum((x - mean) ** 2 for x in tfs) / len(tfs))
    max_tf = max(tfs)
    n_sent = max(1, len(sentences))
    h: dict[str, float] = {}
    for key, t in terms.items():
        if is_stop(key):
            continue
        median = statistics.median(t.positions)
        wcase = t.caps / (1.0 + math.log(t.tf))
        wpos = math.log(math.log(3.0 + median))
        wfreq = t.tf / (mean + std)
        wil = sum(t.left.values())
        wir = sum(t.right.values())
        pwl = len(t.left) / wil if wil else 0.0
        pwr = len(t.right) / wir if wir else 0.0
        wrel = 1.0 + (pwl + pwr) * (t.tf / max_tf)
        wspread = len(t.sentences) / n_sent
        h[key] = (wpos * wrel) / (wcase + wfreq / wrel + wspread / wrel)

    found: dict[tuple[str, ...], list[Any]] = {}
    for seq in chunks:
        for i, item in enumerate(seq):
            if item is None or item[2]:
                continue
            for j in range(i, min(i + max_ngram, len(seq))):
                last = seq[j]
                if last is None:
                    break
                if last[2]:
                    continue
                span = [x for x in seq[i : j + 1] if x is not None]
                keys = tuple(x[0] for x in span)
                if keys in found:
                    found[keys][1] += 1
                    continue
                surface = " ".join(_surface(x[1], x[3]) for x in span)
                found[keys] = [surface, 1]
    out: list[tuple[str, tuple[str, ...], float]] = []
    for keys, (surface, tf) in found.items():
        hs = [h[k] for k in keys if k in h]
        prod = math.prod(hs)
        out.append((surface, keys, prod / (tf * (1.0 + sum(hs)))))
    return out, names


def _surface(tok: str, capital: bool) -> str:
    word = tok[:-2] if tok.lower().endswith("'s") else tok
    return word if capital else word.lower()


def _flush(run: list[str], names: list[tuple[str, str]]) -> list[str]:
    if run:
        surface = " ".join(_surface(t, True) for t in run)
        names.append((surface, " ".join(normalize(t) for t in run)))
    return []


class KeywordExtractor:
    """Picks 5-8 keywords for a turn; build once and reuse (it caches its backend)."""

    def __init__(
        self,
        max_keywords: int = 8,
        min_keywords: int = 5,
        max_ngram: int = 2,
        backend: Backend = "fast",
    ) -> None:
        if not 1 <= min_keywords <= max_keywords:
            raise ValueError("need 1 <= min_keywords <= max_keywords")
        self.max_keywords = max_keywords
        self.min_keywords = min_keywords
        self.max_ngram = max_ngram
        self.backend: Backend = backend

    @cached_property
    def _yake(self) -> Any:
        import yake

        return yake.KeywordExtractor(lan="en", n=self.max_ngram, top=self.max_keywords * 3)

    def _ranked(
        self, sentences: Sequence[str], positions: Sequence[int]
    ) -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[str, str]]]:
        # The local statistics also yield the capitalised runs (names) that
        # both backends add, so they are computed either way.
        cands, names = _yake_statistics(sentences, positions, self.max_ngram)
        if self.backend == "yake":
            pairs = self._yake.extract_keywords("\n".join(sentences))
            ranked = [(p, tuple(normalize(w) for w in _TOKEN.findall(p))) for p, _ in pairs]
            return [r for r in ranked if r[1]], names
        order = sorted(range(len(cands)), key=lambda i: (cands[i][2], i))
        return [(cands[i][0], cands[i][1]) for i in order], names

    def extract(
        self,
        sentences: Sequence[str],
        *,
        positions: Sequence[int] | None = None,
        dates: Sequence[str] = (),
        exclude: Collection[str] = (),
        fallback: Sequence[str] = (),
        known: Collection[str] = (),
    ) -> list[str]:
        """Keywords for ``sentences`` (best first, resolved dates last).

        ``positions`` gives each sentence's place within its own message, so
        that a reply's first sentence counts as early as the opener's;
        ``exclude`` holds words (the speakers' names) that every turn shares;
        ``fallback`` is more text (the turn's small talk) to pad a thin turn from.
        ``known`` holds word keys the caller already indexes (the summary's):
        after the single best phrase, phrases that add a word outside it go
        first, because keywords that repeat the summary find nothing new.
        """
        if positions is None:
            positions = list(range(len(sentences)))
        skip = {normalize(x) for x in exclude}
        known = frozenset(known)
        ranked, names = self._ranked(sentences, positions)
        picked: list[str] = []
        picked_keys: list[frozenset[str]] = []
        pinned: set[int] = set()  # names and quantities: never widened into a phrase
        covered: set[str] = set()
        seen: set[str] = set()

        def take(surface: str, keys: Iterable[str], force: bool = False, pin: bool = False) -> None:
            kset = frozenset(k for k in keys if k not in skip)
            for i in pinned:  # "LGBTQ support" after the name "LGBTQ" adds just "support"
                if picked_keys[i] < kset:
                    kset = kset - picked_keys[i]
                    surface = " ".join(w for w in surface.split()
                                       if normalize(w) not in picked_keys[i])
            low = surface.lower()
            if not kset or low in seen or (not force and covered.issuperset(kset)):
                return
            seen.add(low)
            covered.update(kset)
            # "support group" replaces an earlier "support" instead of sitting beside it.
            for i, old in enumerate(picked_keys):
                if i not in pinned and old < kset:
                    picked[i], picked_keys[i] = surface, kset
                    return
            if pin:
                pinned.add(len(picked))
            picked.append(surface)
            picked_keys.append(kset)

        budget = self.max_keywords - min(len(dates), 2)
        # Quoted titles first ("Charlotte's Web", 'Nothing is Impossible'): the
        # names of books, songs and works are what people ask about by name,
        # and their words are often too common for any statistic to pick.
        for sentence in sentences:
            for m in _QUOTED.finditer(sentence):
                title = (m.group(1) or m.group(2) or "").strip(" ,.!?")
                words = _TOKEN.findall(title)
                if 1 <= len(words) <= 6:
                    take(title, [normalize(w) for w in words], force=True, pin=True)
        # Names and quantities next (at most two each): YAKE ranks them well
        # too, but a bigram around a name can crowd the name itself out.
        for surface, key in [n for n in names if n[1] not in _CALENDAR][:2]:
            take(surface, key.split(), pin=True)
        quantities = 0
        for sentence in sentences:
            for m in _NUMBER_UNIT.finditer(sentence):
                phrase = m.group(0).strip()
                words = phrase.split()
                if quantities >= 2 or (len(words) > 1 and words[-1].lower() in _NOT_UNITS):
                    continue
                quantities += 1
                take(phrase, [words[0].lower()] + [normalize(w) for w in words[1:]], pin=True)
        del picked[budget:], picked_keys[budget:]
        pinned.intersection_update(range(len(picked)))
        if known:
            head, rest = ranked[:1], ranked[1:]
            ranked = head + [r for r in rest if not known.issuperset(r[1])] + [
                r for r in rest if known.issuperset(r[1])]
        for surface, keys in ranked:
            if len(picked) >= budget:
                break
            take(surface, keys)
        for label in dict.fromkeys(dates):
            if len(picked) >= self.max_keywords:
                break
            take(label, [label], force=True)
        if len(picked) < self.min_keywords:
            # Thin turn: pad with any other word (filler included), then with
            # parts of phrases already picked.
            for sentence in [*sentences, *fallback]:
                for tok in _TOKEN.findall(sentence):
                    low = tok.lower()
                    if len(picked) < self.min_keywords and low not in STOPWORDS and len(tok) > 2 \
                            and "'" not in low and not tok[0].isdigit():
                        take(low, [normalize(tok)])
            for surface, keys in ranked:
                if len(picked) >= self.min_keywords:
                    break
                take(surface, keys, force=True)
        return picked[: self.max_keywords]


def topic_tags(
    words: Iterable[str], keywords: Sequence[str], min_tags: int = 3, max_tags: int = 5
) -> list[str]:
    """3-5 broad tags: lexicon topics by frequency, padded with keyword heads.

    ``words`` are the turn's lower-cased tokens. A padded tag is the last word
    of a keyword ("support group" -> "group"), so even an off-lexicon turn
    gets a usable facet; names ("Ao 26 Vegan Food Project", "Time Out Market")
    are keywords already and make no facet, so they do not pad.
    """
    counts: dict[str, float] = {}
    for w in words:
        for tag in topics_of(w):
            counts[tag] = counts.get(tag, 0.0) + (0.5 if tag in WEAK_TAGS else 1.0)
    for kw in keywords:
        for tag in topics_of(kw.split()[-1].lower()):
            counts[tag] = counts.get(tag, 0.0) + 0.5
    rank = {t: i for i, t in enumerate(TOPIC_ORDER)}
    tags = sorted(counts, key=lambda t: (-counts[t], rank[t]))[:max_tags]
    for kw in keywords:
        if len(tags) >= min_tags:
            break
        last = kw.split()[-1].strip("()")
        head = last.lower()
        if len(head) >= 3 and head[0].isalpha() and not last[0].isupper() and head not in tags:
            tags.append(head)
    return tags


def words_of(text: str) -> list[str]:
    """Lower-cased word tokens, as the tagger and the sentence scorer see them."""
    return [t.lower() for t in _TOKEN.findall(text)]
