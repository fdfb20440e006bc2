"""Sentence splitting, word counting and clipping, with compiled regexes only.

The extractive builder splits every ingested message, so this has to cost
microseconds, not the milliseconds a statistical tokenizer would. A regex that
cuts after ``.``, ``!``, ``?`` or ``…`` (plus closing quotes) and then glues back
the pieces that ended in a known abbreviation or an initial is right for chat
text nearly all the time.
"""

from __future__ import annotations

import re

#: Lower-cased abbreviations whose trailing dot does not end a sentence.
ABBREVIATIONS: frozenset[str] = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc approx dept est inc ltd co corp
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur
    thurs fri sat sun no nos fig e.g i.e a.m p.m u.s u.k ph.d b.a m.a
    b.s m.s a.k.a ave blvd rd""".split()
)

# A sentence ends at terminal punctuation (optionally followed by quotes or
# brackets) when whitespace follows; line breaks always end one.
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\s*\n+\s*")
_LAST_TOKEN = re.compile(r"(\S+)\.$")
_WORD = re.compile(r"\S+")


def _ends_with_abbreviation(piece: str) -> bool:
    m = _LAST_TOKEN.search(piece)
    if not m:
        return False
    token = m.group(1).lower().lstrip("(\"'")
    # Single letters ("J. K. Rowling") and listed abbreviations.
    return token in ABBREVIATIONS or (len(token) == 1 and token.isalpha())


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into trimmed, non-empty sentences in order."""
    text = text.strip()
    if not text:
        return []
    out: list[str] = []
    pending = ""
    pos = 0
    for m in _BOUNDARY.finditer(text):
        piece = text[pos : m.start()] + text[m.start() : m.end()].rstrip()
        pos = m.end()
        pending = f"{pending} {piece}" if pending else piece
        if "\n" not in m.group(0) and _ends_with_abbreviation(pending):
            continue
        if pending.strip():
            out.append(pending.strip())
        pending = ""
    tail = text[pos:].strip()
    if tail or pending:
        joined = f"{pending} {tail}".strip() if pending else tail
        if joined:
            out.append(joined)
    return out


def count_words(text: str) -> int:
    """Whitespace-delimited words: the unit the 30-word summary limit is in."""
    return len(_WORD.findall(text))


def clip_words(text: str, max_words: int, ellipsis: str = "…") -> str:
    """At most ``max_words`` words; ``ellipsis`` is glued to the last kept word."""
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    if max_words <= 0:
        return ""
    kept = " ".join(words[:max_words]).rstrip(",;:-–—")
    return kept + ellipsis
