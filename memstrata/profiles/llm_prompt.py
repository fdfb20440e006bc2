"""The prompt of the LLM profile extractor (one role: read a session into occurrences).

Written for :mod:`memstrata.profiles.llm_extract`, in the same style as the
L0/L1/L2 prompts of :mod:`memstrata.llm.prompts` (dates resolved against the
session date, JSON only) but kept apart from them: a change here must not
change :data:`memstrata.llm.prompts.PROMPT_VERSION`, which keys the L1/L2
cache. Bump :data:`PROFILE_PROMPT_VERSION` whenever a text here changes: it is
part of the extractor's version, which keys the stored extraction of each
session, so a session is read again rather than mixed with the old prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.llm.prompts import Block, date_anchor
from memstrata.model import SessionMeta

PROFILE_PROMPT_VERSION = "pp1"
#: The most entities and facts one reply may hold (more are cut off, not an error).
MAX_ENTITIES = 40
MAX_FACTS = 80

#: What a fact's ``attribute`` may be, and what it means (shown to the model).
ATTRIBUTES: dict[str, str] = {
    "age": "age in years (a number)",
    "birthday": "date of birth",
    "lives_in": "the city, country or place they live in now",
    "from": "where they come from (hometown, home country)",
    "works_as": "their job or occupation",
    "works_at": "the company, school or organisation they work or study at",
    "diet": "diet (vegetarian, vegan, pescatarian...)",
    "is_a": "what they are, in a few words (a runner, a beagle, a seafood restaurant)",
    "owns": "something they own or have (a car, a bike, a cat named Pixel)",
    "activity": "a hobby or habit they keep up (running, painting)",
    "likes": "something they like, love or enjoy (the thing only)",
    "dislikes": "something they dislike or stopped liking (the thing only)",
    "eats": "a food or dish they eat (the food only)",
    "looks_after": "who or what they look after: value is an entity id, \"user\" or "
                   "\"assistant\"",
    "recommended": "something they recommended: value is an entity id",
    "event": "something that happened to them or that they did (a short phrase)",
    "plan": "something they plan or will do (a short phrase)",
}

PROFILE_SHAPE = (
    '{"entities": [{"id": "e1", "name": "<name or null>", "relation": "<sister, dog, '
    'neighbour... or null>", "of": "user|assistant|null", "kind": "person|pet|place|org", '
    '"gender": "female|male|null", "turns": [<turn number>, ...]}], '
    '"facts": [{"about": "user|assistant|<entity id>", "attribute": "<attribute>", '
    '"value": "<a few words>", "date": "<YYYY, YYYY-MM, YYYY-MM-DD or null>", '
    '"turn": <turn number>, "said_by": "user|assistant"}]}'
)


def profile_system(meta: SessionMeta) -> str:
    attributes = "\n".join(f"  - {name}: {meaning}" for name, meaning in ATTRIBUTES.items())
    if meta.session_date:
        dates = ("- date: when the fact holds or happened, written as YYYY, YYYY-MM or "
                 "YYYY-MM-DD and counted from the session date (\"last month\", \"since "
                 "January\"); null when the conversation does not say.")
    else:
        dates = "- date: the session date is unknown, so give a date only when one is written."
    return "\n".join([
        "You keep the profiles of a long-term memory: one for the user, one for the "
        "assistant and one for every person, pet, place or organisation the conversation "
        "says something about.",
        "Read the conversation below and list:",
        "1. entities: everyone and everything the conversation describes, except the user "
        "and the assistant themselves. For each give an id (e1, e2, ...), the name as "
        "written (null when never named), its relation to one of the two participants "
        "(\"sister\", \"neighbour\", \"dog\", \"boss\"; null when none) and whose relation "
        "that is (of: \"user\" or \"assistant\"), its kind, its gender when the text makes "
        "it plain, and the numbers of the turns that mention it. \"my sister Ines\" is one "
        "entity with a name and a relation.",
        "2. facts: one per value of one attribute of one subject. about: \"user\", "
        "\"assistant\" or an entity id; attribute: one of",
        attributes,
        "",
        "Rules:",
        "- \"I\", \"me\" and \"my\" are whoever speaks that message; \"you\" is the other "
        "participant. What the assistant says, suggests or recommends is about the "
        "assistant, never the user.",
        "- value: a few words taken from the conversation; never add what it does not say.",
        dates,
        "- turn: the number in brackets of the turn that says it; said_by: who said it.",
        "- Questions and small talk hold no facts.",
        f"- At most {MAX_ENTITIES} entities and {MAX_FACTS} facts.",
        "",
        f"Answer with one JSON object and nothing else, shaped as: {PROFILE_SHAPE}",
    ])


def profile_messages(meta: SessionMeta, blocks: Sequence[Block],
                     speakers: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The extractor's messages; ``speakers``: (participant, name) of the session's speakers."""
    names = ", ".join(f"{who} is {name}" for who, name in speakers) or "not given"
    conversation = "\n\n".join(f"[Turn {n}]\n{text}" for n, text in blocks)
    user = (f"Session date: {date_anchor(meta)}\nSpeakers: {names}\n\n{conversation}")
    return [{"role": "system", "content": profile_system(meta)},
            {"role": "user", "content": user}]
