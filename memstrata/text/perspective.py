"""Rewrite first and second person into named third person.

A memory line reading "I went to a support group" is useless once it is cut
from its conversation: whose memory is it? Replacing the pronouns with the
speakers' names ("Caroline went to a support group") makes every summary, fact
and note stand alone, and puts the names where BM25 and the encoder see them.

The rewrite is a token walk with a few agreement rules (``I am`` -> ``is``,
``I love`` -> ``loves``); it conjugates only verbs from a known list, so an
unknown word after "I" is left as it was rather than mangled.
"""

from __future__ import annotations

import re

_ADVERBS = frozenset(
    """really just also still always never actually usually often sometimes finally totally
    truly even recently definitely absolutely kinda especially genuinely honestly already
    seriously currently mostly""".split()
)
_AUX_BEFORE = frozenset(
    """do does did can could will would should have has had are were was is may might must
    shall to let make help don't didn't can't won't wouldn't couldn't shouldn't""".split()
)
# Base-form verbs that take -s in the third person; irregular forms below.
_VERBS = frozenset(
    """love like enjoy prefer hate want need think feel know believe hope plan wish miss
    work live play paint draw read write cook bake run swim sing dance teach learn study
    visit travel collect volunteer support care remember forget understand agree mean
    try buy sell own keep make take give get find see hear say tell call ask help use
    spend save start stop finish join mentor watch listen practice spend adore admire
    appreciate struggle worry cherish value trust seem look sound cry laugh smile guess
    bet wonder imagine realize recommend suggest promise intend expect owe walk hike
    bike ride drive eat drink sleep wake stay move leave feed adopt raise manage lead
    create build design craft knit sew garden camp fish hunt climb surf ski skate""".split()
)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "are": "is"}
_AGREE = {  # subject-verb pairs after a substituted "I"/"you"
    "am": "is", "are": "is", "were": "was", "have": "has", "haven't": "hasn't",
    "don't": "doesn't", "do": "does", "aren't": "isn't", "weren't": "wasn't",
}
_QUESTION_AUX = {"are": "is", "were": "was", "have": "has", "do": "does", "aren't": "isn't"}
_IDIOMS_AFTER_YOU = frozenset({"know", "guys", "all", "see"})
_IDIOMS_BEFORE_YOU = frozenset({"thank", "thanks", "see", "miss", "love", "bless", "hug"})

_SECOND = frozenset({"you", "your", "yours", "yourself", "you're", "you've", "you'll", "you'd"})
_SPLIT = re.compile(r"(\s+)")
_EDGE = re.compile(r"^([^\w']*)(.*?)([^\w']*)$")


def _third_person(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _cap(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def rewrite_person(text: str, speaker: str, listener: str | None = None) -> str:
    """``text`` said by ``speaker`` with I/me/my (and you/your, if ``listener``) named.

    "I'm keen on counseling" by Caroline -> "Caroline is keen on counseling";
    "You'd be a great counselor" by Melanie to Caroline -> "Caroline would be a
    great counselor". Generic "you know"/"thank you" are left alone.
    """
    text = text.replace("’", "'")
    parts = _SPLIT.split(text)
    words = parts[0::2]
    n = len(words)
    out = list(words)
    i = 0
    while i < n:
        m = _EDGE.match(words[i])
        assert m is not None
        pre, core, post = m.groups()
        low = core.lower()
        name: str | None = None
        first = core in ("I", "i", "I'm", "I've", "I'd", "I'll", "i'm", "i've", "i'd", "i'll")
        if first or low in ("me", "my", "mine", "myself"):
            name = speaker
        elif listener and low in _SECOND:
            prev = words[i - 1].lower().strip(",.!?") if i else ""
            nxt = words[i + 1].lower().strip(",.!?") if i + 1 < n else ""
            if not (low == "you" and (prev in _IDIOMS_BEFORE_YOU or nxt in _IDIOMS_AFTER_YOU)):
                name = listener
        if name is None:
            i += 1
            continue
        replaced = _replace(low, name, post)
        out[i] = pre + replaced
        # Question order: "are you" -> "is Caroline", "have you" -> "has Caroline".
        if i and low == "you":
            prev_raw = out[i - 1]
            pm = _EDGE.match(prev_raw)
            if pm and pm.group(2).lower() in _QUESTION_AUX and not pm.group(3):
                out[i - 1] = pm.group(1) + _cap(_QUESTION_AUX[pm.group(2).lower()], pm.group(2))
        # Subject agreement for the next verb ("I love" -> "loves").
        if low in ("i", "you") and not post and not (i and _is_aux(words[i - 1])):
            j = i + 1
            while j < n and words[j].lower() in _ADVERBS:
                j += 1
            if j < n:
                vm = _EDGE.match(words[j])
                if vm and not vm.group(1):
                    verb = vm.group(2)
                    vl = verb.lower()
                    new = _AGREE.get(vl) or (_third_person(vl) if vl in _VERBS else None)
                    if new:
                        out[j] = new + vm.group(3)
                        i = j
        i += 1
    parts[0::2] = out
    return "".join(parts)


def _is_aux(word: str) -> bool:
    return word.lower().strip(",.!?") in _AUX_BEFORE


def _replace(low: str, name: str, post: str) -> str:
    possessive = f"{name}'s"
    table = {
        "i": name, "me": name, "myself": "themself", "you": name, "yourself": "themself",
        "my": possessive, "mine": possessive, "your": possessive, "yours": possessive,
        "i'm": f"{name} is", "you're": f"{name} is", "i've": f"{name} has", "you've": f"{name} has",
        "i'd": f"{name} would", "you'd": f"{name} would", "i'll": f"{name} will",
        "you'll": f"{name} will",
    }
    return table[low] + post
