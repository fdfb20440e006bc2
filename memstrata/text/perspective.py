"""Rewrite first and second person into named third person.

A memory line reading "I went to a support group" is useless once it is cut
from its conversation: whose memory is it? Replacing the pronouns with the
speakers' names ("Caroline went to a support group") makes every summary, fact
and note stand alone, and puts the names where BM25 and the encoder see them.

The rewrite is a token walk with a few agreement rules (``I am`` -> ``is``,
``I love`` -> ``loves``, ``if I add`` -> ``adds``). A word right after "I" (always
a subject) is a verb in the present unless it looks like something else (a past
form, a modal, a function word, an adverb); after "you", which may be an object,
only verbs from a known list are conjugated.
A wrong speaker is worse than none, so "you" is left alone where it means
anyone ("it's great when you reach a goal", "having people who back you").
"""

from __future__ import annotations

import re

from memstrata.text.lexicon import STOPWORDS
from memstrata.text.vocab import PAST_FORMS

_ADVERBS = frozenset(
    """really just also still always never actually usually often sometimes finally totally
    truly even recently definitely absolutely kinda especially genuinely honestly already
    seriously currently mostly""".split()
)
_AUX_BEFORE = frozenset(
    """do does did can could will would should have has had are were was is may might must
    shall to let make help don't didn't can't won't wouldn't couldn't shouldn't lets made makes
    helps helped saw watched heard""".split()
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
    create build design craft knit sew garden camp fish hunt climb surf ski skate post win
    add hold come end face choose share wait belong shine decide donate treasure dream tend
    assume respect visualize doubt encourage reach""".split()
)
#: After "I" these stay as they are: colloquial modals and forms that are past as often as not.
_KEEP_AFTER_I = frozenset("""gotta gonna wanna used put cut hit set hurt quit shut cast cost
    spread sure""".split())
#: Words that open a clause whose "you" is anyone ("It's great when you ...").
_IMPERSONAL_START = re.compile(
    r"^\W*(?:it(?:'s|\s+is|\s+can|\s+feels|\s+makes)|nothing|there's\s+nothing"
    r"|(?!\w+thing\b)[a-z]+ing)\b",
    re.IGNORECASE)
_GENERIC_LEAD = frozenset("when whenever if once something anything who".split())
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
    generic_you = _generic_you(text, words)
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
        elif listener and low in _SECOND and not generic_you:
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
        if i and low == "you" and _opens_clause(words, i - 1):
            prev_raw = out[i - 1]
            pm = _EDGE.match(prev_raw)
            if pm and pm.group(2).lower() in _QUESTION_AUX and not pm.group(3):
                out[i - 1] = pm.group(1) + _cap(_QUESTION_AUX[pm.group(2).lower()], pm.group(2))
        # Subject agreement for the next verb ("I love" -> "loves").
        if low in ("i", "you") and not post and not _compound(words, i) \
                and not (i and _is_aux(words[i - 1])):
            j = i + 1
            while j < n and (words[j].lower() in _ADVERBS or words[j].lower().endswith("ly")):
                j += 1
            if j < n:
                vm = _EDGE.match(words[j])
                if vm and not vm.group(1):
                    verb = vm.group(2)
                    vl = verb.lower()
                    after = words[j + 1].lower().strip(",.!?") if j + 1 < n else ""
                    known = vl in _VERBS or (low == "i" and _present_verb(vl, after))
                    new = _AGREE.get(vl) or (_third_person(vl) if known else None)
                    if new:
                        out[j] = new + vm.group(3)
                        i = j
        i += 1
    parts[0::2] = out
    return "".join(parts)


def _present_verb(low: str, after: str) -> bool:
    """Is ``low``, right after "I", a verb in the present ("add", "post", "win")?

    Not when a verb follows it ("I first watched", "I absolutley love"): then it is
    an adverb (or a typo of one), and which word to conjugate is a guess.
    """
    if low in _VERBS:
        return True
    if after in _VERBS or after in PAST_FORMS or after.endswith("ed"):
        return False
    return (low.isalpha() and len(low) > 1 and low not in STOPWORDS
            and not _past(low) and low not in _KEEP_AFTER_I
            and not low.endswith(("ed", "ly", "ing")))


def _past(low: str) -> bool:
    """An irregular past form, also behind a prefix ("retook", "overcame")."""
    return low in PAST_FORMS or any(
        low.startswith(p) and low[len(p):] in PAST_FORMS for p in ("re", "over", "under", "out"))


def _generic_you(text: str, words: list[str]) -> bool:
    """"you" means anyone: an impersonal clause ("It's great when you ...", "Having people
    who back you ...") with "you" after a word that generalises (when, if, something)."""
    if text.rstrip().endswith("?") or not _IMPERSONAL_START.match(text):
        return False  # a question is put to the listener
    lows = [w.lower().strip(",.!?;:\"'()") for w in words]
    first = next((k for k, w in enumerate(lows) if w in _SECOND), None)
    return first is not None and any(x in _GENERIC_LEAD for x in lows[max(0, first - 3):first])


def _compound(words: list[str], i: int) -> bool:
    """"Toby and I", "my wife and I": a plural subject, so the verb stays as it is.

    Not ", and I want" or "loves them so much and I want", where "and" joins clauses.
    """
    if i < 2 or words[i - 1].lower() not in ("and", "or", "nor"):
        return False
    before = words[i - 2]
    if before[-1:] in ",.;:!?-":
        return False
    if before[:1].isupper():
        start = i - 2  # "Toby and I"
    elif i >= 3 and words[i - 3].lower() in ("my", "our", "the", "his", "her", "their"):
        start = i - 3  # "my wife and I"
    else:
        return False
    # ... opening its clause: "pursuing my goals and I hope" joins two clauses.
    lead = words[start - 1] if start else ""
    return not lead or lead[-1:] in ",;:-–—" or lead.lower() in (
        "and", "but", "so", "then", "till", "until", "when", "while", "because", "since", "after",
        "before", "if", "that", "as")


def _opens_clause(words: list[str], k: int) -> bool:
    """``words[k]`` can open a question ("have you"), unlike "to have you", "will have you"."""
    return k == 0 or words[k - 1].lower() not in _AUX_BEFORE


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


#: The names a speaker without one is given ("User", "Assistant": ``Message.who``) when a
#: built line is rewritten into the third person.
PLACEHOLDER_SPEAKERS: tuple[str, str] = ("User", "Assistant")
_PLACEHOLDER = re.compile(r"\b(User|Assistant)(['’]s)?\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|[\"“(]\s*)$")


def unname_placeholders(text: str, reader: bool = False) -> str:
    """``text`` with the placeholder speakers of :func:`rewrite_person` spoken of in words.

    "User's stapler is red and User keeps it" is an internal form: shown to a
    person it reads "The user's stapler is red and the user keeps it", and in an
    answer to the user (``reader``) "your stapler ... you keep it" where the
    placeholder is the user ("the assistant" stays in the third person).
    """
    def word(m: re.Match[str]) -> str:
        who, possessive = m.group(1), bool(m.group(2))
        if who == "User" and reader:
            out = "your" if possessive else "you"
        else:
            out = f"the {who.lower()}" + ("'s" if possessive else "")
        if reader:  # an answer is a span, not a sentence: left as cut
            return out
        return _cap(out, "X") if _SENTENCE_START.search(text[:m.start()]) else out

    return _PLACEHOLDER.sub(word, text) if "User" in text or "Assistant" in text else text
