"""Prompt texts for building L0, L1 and L2 with an LLM.

They follow the structure and limits of APDMem's construction prompts
(Appendix I, figures 4-6) in memstrata's own words, and ask for JSON so the
output can be checked field by field. Bump :data:`PROMPT_VERSION` whenever a
text here changes: it is part of the builder version, which keys the L1/L2
cache, so old cached layers are rebuilt rather than mixed with new ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.model import SessionMeta

PROMPT_VERSION = "p1"

#: (turn number, rendered turn text) as shown to the model.
Block = tuple[int, str]

_DATE_RULE = (
    "- Time: rewrite every relative time expression (\"yesterday\", \"last weekend\", "
    "\"in two weeks\") as a calendar date, or a month or year when that is all that can be "
    "known, counted from the session date given with the conversation."
)
_DATE_RULE_UNKNOWN = (
    "- Time: the session date is unknown, so keep time expressions as written rather "
    "than guessing a calendar date."
)
_NAME_RULE = (
    "- Names: never use a pronoun (he, she, it, they, this, that) where a name would do. "
    "Write the person, pet, place or thing it stands for, so that every line can be read "
    "on its own, long after the conversation."
)
_SPECIFICS_RULE = (
    "- Specifics: keep names, dates, places, quantities, prices and titles exactly as given."
)


def _date_rule(meta: SessionMeta) -> str:
    return _DATE_RULE if meta.session_date else _DATE_RULE_UNKNOWN


def date_anchor(meta: SessionMeta) -> str:
    """The session date with its weekday, which helps resolve "last Friday"."""
    if meta.session_date is None:
        return "unknown"
    return meta.session_date.strftime("%Y-%m-%d (%A)")


def _conversation(blocks: Sequence[Block], marks: dict[int, str] | None = None) -> str:
    parts = []
    for number, text in blocks:
        mark = f" | {marks[number]}" if marks and number in marks else ""
        parts.append(f"[Turn {number}{mark}]\n{text}")
    return "\n\n".join(parts)


# -- L0: per-turn thematic summaries (the search index) ----------------------

L0_SHAPE = ('{"turns": [{"turn_number": <int>, "summary": "<one sentence>", '
            '"keywords": ["<term>", ...], "tags": ["<label>", ...]}]}')


def l0_system(meta: SessionMeta, max_words: int) -> str:
    return "\n".join([
        "You write the search index for a long-term memory of past conversations.",
        "Each turn of the conversation below is marked TARGET or CONTEXT. For every TARGET "
        "turn, and only those, produce:",
        f"- summary: one sentence of no more than {max_words} words that says what the turn "
        "was about and what was learned in it;",
        "- keywords: 5 to 8 concrete search terms taken from the turn (people, places, items, "
        "dates, numbers, activities);",
        "- tags: 3 to 5 broad topic labels.",
        "",
        "Rules:",
        _NAME_RULE,
        _date_rule(meta),
        "- CONTEXT turns only help you understand the TARGET turns; do not write entries "
        "for them.",
        "- Use the turn numbers exactly as shown in the brackets.",
        "",
        f"Answer with a JSON object and nothing else, shaped as: {L0_SHAPE}",
    ])


def l0_messages(meta: SessionMeta, blocks: Sequence[Block], targets: Sequence[int],
                max_words: int) -> list[dict[str, str]]:
    target_set = set(targets)
    marks = {n: ("TARGET" if n in target_set else "CONTEXT") for n, _ in blocks}
    user = (f"Session date: {date_anchor(meta)}\n\n{_conversation(blocks, marks)}\n\n"
            f"Write entries for turns: {', '.join(str(n) for n in targets)}.")
    return [{"role": "system", "content": l0_system(meta, max_words)},
            {"role": "user", "content": user}]


# -- L1: key facts about the people in a session ------------------------------

L1_SHAPE = '{"facts": [{"text": "<one self-contained fact>", "turns": [<turn number>, ...]}]}'
L1_MIN_FACTS = 5
L1_MAX_FACTS = 25


def l1_system(meta: SessionMeta) -> str:
    return "\n".join([
        "You maintain a long-term memory about the people in a conversation.",
        "Read the whole conversation and list the key facts it establishes about them: who "
        "they are, events in their lives, what they did or plan to do, what they like, "
        "dislike, own or need, their constraints, and advice or recommendations they were "
        "given.",
        "",
        "Rules:",
        _NAME_RULE,
        _date_rule(meta),
        _SPECIFICS_RULE,
        "- Each fact is one complete sentence that loses nothing important from the "
        "conversation; do not add anything the conversation does not say.",
        f"- Give {L1_MIN_FACTS} to {L1_MAX_FACTS} facts: few for a thin conversation, many "
        "for a rich one.",
        "- For each fact, list the numbers of the turns it comes from.",
        "",
        f"Answer with a JSON object and nothing else, shaped as: {L1_SHAPE}",
    ])


def l1_messages(meta: SessionMeta, blocks: Sequence[Block]) -> list[dict[str, str]]:
    user = f"Session date: {date_anchor(meta)}\n\n{_conversation(blocks)}"
    return [{"role": "system", "content": l1_system(meta)},
            {"role": "user", "content": user}]


# -- L2: atomic notes per turn ---------------------------------------------------

L2_SHAPE = '{"turns": [{"turn_number": <int>, "notes": ["<one atomic fact>", ...]}]}'


def l2_system(meta: SessionMeta) -> str:
    return "\n".join([
        "You turn a conversation into detailed evidence notes, turn by turn.",
        "For every turn, split what was said into atomic facts: each note carries exactly "
        "one fact, and two facts are never joined into one note. Say who stated or asked "
        "it (\"Maria said ...\", \"The assistant suggested ...\").",
        "",
        "Rules:",
        _NAME_RULE,
        _date_rule(meta),
        _SPECIFICS_RULE,
        "- Each note must make sense with no other context.",
        "- Cover every turn shown, in order, using the turn numbers in the brackets.",
        "",
        f"Answer with a JSON object and nothing else, shaped as: {L2_SHAPE}",
    ])


def l2_messages(meta: SessionMeta, blocks: Sequence[Block]) -> list[dict[str, str]]:
    user = f"Session date: {date_anchor(meta)}\n\n{_conversation(blocks)}"
    return [{"role": "system", "content": l2_system(meta)},
            {"role": "user", "content": user}]
