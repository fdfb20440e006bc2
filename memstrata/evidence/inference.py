"""Questions shaped as yes/no that ask which of two things, answered offline.

A yes/no-shaped question that offers alternatives ("a beach or the
mountains?") is answered with one of them, the one the evidence names more,
never with "Yes" or "No", which answer nothing there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memstrata.evidence import lexical
from memstrata.evidence.lines import EvidenceLine

#: " or " between two alternatives (not "or not", "yes or no", "and/or").
_OR = re.compile(r"(?<=\s)or\s+(?!not\b|else\b|otherwise\b)", re.IGNORECASE)
_YES_OR_NO = re.compile(r"\byes\s+or\s+no\b", re.IGNORECASE)
#: Words that open an alternative and are not part of it.
_LEADING = frozenset({"a", "an", "the", "some", "any", "his", "her", "their", "my", "our",
                      "your", "its", "to", "in", "at", "on", "by", "for", "with", "from",
                      "into", "of", "more", "rather", "either"})
#: Where the right-hand alternative ends: a clause or a trailing phrase after it.
_RIGHT_END = re.compile(
    r"[?,;!](?:\s|$)|(?<!\b[A-Z])\.(?:\s|$)|\s+(?:for|in|at|on|during|when|if|because|this|next|after|before|"
    r"instead|than|that|who|which|where|today|tonight|tomorrow|now|soon|later)\b",
    re.IGNORECASE)


def _left_alternative(before: str, width: int, named: bool) -> str:
    """The alternative that ends just before " or ": as many words as the right one has,
    a whole capitalised run when the right one is a name, never an opening word."""
    tokens = before.split()
    taken: list[str] = []
    while tokens:
        word = tokens[-1]
        bare = word.strip("\"'“”‘’(").lower()
        if bare in _LEADING or lexical.is_stop(bare) and not (named and word[:1].isupper()):
            break
        if named and not word[:1].isupper():
            break
        if not named and len(taken) >= width:
            break
        taken.insert(0, tokens.pop())
    return " ".join(taken).strip("\"'“”‘’(),")


def alternatives(question: str) -> tuple[str, str] | None:
    """The two alternatives a yes/no-shaped question offers, or None when it offers none."""
    if _YES_OR_NO.search(question):
        return None
    found = list(_OR.finditer(question))
    if len(found) != 1:
        return None
    m = found[0]
    rest = question[m.end():]
    end = _RIGHT_END.search(rest)
    right_words = (rest[:end.start()] if end else rest).strip(" ?\"'“”").split()
    while right_words and right_words[0].lower() in _LEADING:
        right_words.pop(0)
    if not right_words or len(right_words) > 5:
        return None
    right = " ".join(right_words).strip("\"'“”‘’")
    named = right[:1].isupper()
    left = _left_alternative(question[:m.start()], len(right_words), named)
    if not left or not lexical.terms(left) or not lexical.terms(right):
        return None
    return left, right


def choose(pair: tuple[str, str], lines: Sequence[EvidenceLine],
           participants: Sequence[str] = ()) -> tuple[str, list[EvidenceLine]]:
    """The alternative the evidence names more, with the lines that name it.

    Each alternative is scored by its own words (those the other does not
    share: "national" and "theme" for two parks) over the lines read; the
    names of the people talking are left out, since nearly every line holds
    them. A tie keeps the first, as the question put it.
    """
    talking = frozenset(lexical.stem(w) for p in participants for w in lexical.words(p))
    own = [lexical.term_set(p) - talking or lexical.term_set(p) for p in pair]
    distinct = [own[0] - own[1] or own[0], own[1] - own[0] or own[1]]
    support: list[list[EvidenceLine]] = [[], []]
    score = [0.0, 0.0]
    for ln in lines:
        have = lexical.term_set(ln.text)
        for i in (0, 1):
            share = len(distinct[i] & have) / len(distinct[i])
            if share:
                score[i] += share
                support[i].append(ln)
    pick = 1 if score[1] > score[0] else 0
    return pair[pick], support[pick][:1]
