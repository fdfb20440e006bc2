"""Small hand-made word lists for the extractive builder.

Three lists, each kept short on purpose: function words (never keywords),
chat filler (words that carry tone but no facts: "wow", "awesome", "gonna"),
and a topic lexicon that maps word stems to broad tags. All lookups are
against lower-cased tokens with straight apostrophes.
"""

from __future__ import annotations

from memstrata.memo import memo

from memstrata.text.vocab import DEICTIC_TIME_WORDS, TIME_SHIFT_WORDS, TIME_UNIT_WORDS

#: Function words (pronouns, determiners, auxiliaries, prepositions, conjunctions) and the
#: time words of :mod:`memstrata.text.vocab` (a keyword never; a question keeps some).
STOPWORDS: frozenset[str] = frozenset(
    """a about above after again against ago all almost along already also although always am
    among an and another any anybody anyone anything anyway anywhere are aren't around as at
    away back be became because become been before being below beside besides between beyond
    both but by can can't cannot could couldn't did didn't do does doesn't doing don't done down
    during each either else enough even ever every everybody everyone everything everywhere
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's however i i'd i'll i'm i've if in into is isn't
    it it's its itself just least less let let's many may maybe me might mine more most much must
    my myself neither never no nobody none nor not nothing now of off often on once one only onto
    or other others otherwise our ours ourselves out over own per perhaps quite rather same shall
    she she'd she'll she's should shouldn't since so some somebody someone something sometimes
    somewhat somewhere soon still such than that that's the their theirs them themselves then
    there there's therefore these they they'd they'll they're they've this those though through
    thus till to too toward towards under until up upon us very via was wasn't we we'd we'll we're
    we've were weren't what what's whatever when whenever where where's wherever whether which
    while who who's whoever whole whom whose why will with within without won't would wouldn't
    yet you you'd you'll you're you've your yours yourself yourselves u ur ya yours""".split()
) | TIME_UNIT_WORDS | TIME_SHIFT_WORDS | DEICTIC_TIME_WORDS

#: Conversational filler: tone, reactions and vague verbs, not facts.
FILLER: frozenset[str] = frozenset(
    """hey hi hello hiya yo bye goodbye thanks thank thx ty please welcome wow whoa woah oh ooh ah
    aw aww awww yeah yep yup yes nope nah ok okay alright haha hahaha lol lmao omg hmm um uh
    cool awesome amazing great nice good fine fantastic wonderful incredible super sweet lovely
    glad sure totally definitely absolutely really truly pretty kinda sorta gonna wanna gotta
    lot lots bit thing things stuff kind sort way ways guess mean means meant sounds sound
    know knew think thought feel felt seem seems seemed look looks looking see seen saw tell told
    say said talk talking chat catch care keep going get gets got getting make makes made
    happen happened happening hear heard want wanted wish hope hoped let's like new up
    must've should've would've could've good great best better well much many such ever
    anything everything something nothing idea ideas right exactly true indeed actually
    honestly seriously basically literally probably certainly especially also
    go goes went gone come comes came coming take takes took taken give gives gave given put
    try tries tried trying use used using find found doing bring brought need needs needed
    taking making letting looked cause part chose stuff lots
    pic pics huh eh btw anyways particular overall ages talked chatted""".split()
)

#: Speech-act openers that make a short sentence pure small talk.
GREETING_OPENERS: tuple[str, ...] = (
    "hey", "hi", "hello", "good to see", "great to see", "nice to see", "long time",
    "how are you", "how have you been", "how's it going", "what's up", "thanks", "thank you",
    "wow", "bye", "see you", "take care", "talk soon", "catch you", "sounds good",
    "sounds great", "that's great", "that's awesome", "that's cool", "that's amazing",
    "that's so", "so glad", "glad to hear", "good luck", "congrats", "congratulations",
    "oh", "aw", "haha", "lol", "yeah", "yes", "no worries", "sure",
)

# Topic lexicon: tag -> entries. An entry ending in "*" matches any word that
# starts with it (stems of 4+ letters); other entries match the word or its
# plural exactly, so short words like "art" do not catch "article".
_TOPICS: dict[str, str] = {
    "family": "family famil* kid child children son daughter mom mum mother dad father parent* "
    "husband wife sister brother sibling* grandm* grandp* grandkid* grandchild* baby babies "
    "cousin aunt uncle nephew niece adopt* newborn toddler",
    "relationships": "friend* boyfriend girlfriend partner marri* marry wedding divorc* breakup "
    "relationship* romantic crush dating fianc* spouse anniversary single",
    "work": "work* job career* office boss colleague* cowork* employ* company compan* business* "
    "promot* interview* salary project* client* startup* manager* intern* shift* "
    "profession* entrepreneur*",
    "education": "school* college* universit* class classes course* study studies studying "
    "student* teacher* degree* exam* lecture* homework graduat* educat* edu learn* "
    "research* thesis campus scholarship* certific*",
    "health": "health* doctor* hospital* sick illness medic* therap* surgery injur* pain diet "
    "sleep mental anxiety depress* stress* clinic* symptom* recover* counsel* "
    "wellbeing well-being diagnos* cancer",
    "sports": "sport* run runs running runner* marathon* race races racing gym workout* exercis* "
    "yoga swim* soccer football basketball baseball tennis bike biking cycl* climb* "
    "team* match ski skiing surf* hockey golf athlet* coach* tournament* fitness",
    "travel": "travel* trip trips vacation* holiday* flight* fly flew airport* hotel* abroad "
    "tour tours touring tourist* journey* passport roadtrip visit* destination* cruise",
    "nature": "camp camping campfire hike hikes hiking hiker* mountain* lake lakes forest* park "
    "parks garden* nature outdoor* beach* sunset* sunrise* ocean river* trail* "
    "wildlife flower* tree trees",
    "art": "paint* draw drawing* drew art arts artist* artwork* sculpt* pottery potter* craft* "
    "photograph* photo photos museum* gallery galleries design* creativ* knit* sew* "
    "mural* canvas sketch* exhibit* dance dancing dancer*",
    "music": "music* song* sing singing singer* concert* band bands guitar* piano* violin* "
    "drum drums drummer album* instrument* playlist* choir orchestra* melod* "
    "compos* lyric*",
    "books": "book books read reads reading reader* novel* author* library libraries "
    "chapter* poem* poet* literature bookstore* writ* memoir*",
    "food": "food* cook* bake baking baked recipe* dinner* lunch* breakfast* restaurant* meal* "
    "cake* pizza coffee eat eating ate vegan vegetarian kitchen* dish dishes chef* snack* "
    "wine dessert* chocolate*",
    "pets": "pet pets dog dogs puppy puppies pup cat cats kitten* horse* vet turtle* hamster* "
    "rabbit* bunny parrot* guinea",
    "finance": "money budget* saving savings invest* stock stocks bank* loan* debt* pay paid "
    "price* cost costs rent mortgage* afford* expens* purchas* financ* donat*",
    "home": "home homes house houses apartment* room rooms decor* furnitur* "
    "neighbo* renovat* backyard",
    "events": "party parties birthday* festival* parade* ceremon* celebrat* event* "
    "conference* christmas thanksgiving halloween graduation reunion* fundrais*",
    "feelings": "happy happiness sad sadness excit* proud scared nervous grateful "
    "thankful lonely upset angry joy joyful emotion* overwhelm* inspir* motivat* "
    "anxious frustrat* worried hopeful",
    "community": "lgbt* lgbtq pride transgender trans queer gay lesbian communit* activis* "
    "volunteer* charity charities advoca* rights support group* mentor* nonprofit* church",
    "technology": "computer* phone* app apps software coding code program* laptop* tech "
    "technolog* internet online robot* gadget* videogame* gaming gamer*",
    "media": "movie* film* series tv netflix podcast* "
    "youtube documentar* episode*",
}

#: Tags that are almost always present in chat; ranked after concrete topics.
WEAK_TAGS: frozenset[str] = frozenset({"feelings"})


def _compile_topics() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    exact: dict[str, list[str]] = {}
    prefix: dict[str, list[str]] = {}
    for tag, entries in _TOPICS.items():
        for entry in entries.split():
            if entry.endswith("*"):
                prefix.setdefault(entry[:-1], []).append(tag)
            else:
                exact.setdefault(entry, []).append(tag)
    return (
        {k: tuple(dict.fromkeys(v)) for k, v in exact.items()},
        {k: tuple(dict.fromkeys(v)) for k, v in prefix.items()},
    )


TOPIC_EXACT, TOPIC_PREFIX = _compile_topics()
TOPIC_ORDER: tuple[str, ...] = tuple(_TOPICS)
_PREFIX_LENGTHS: tuple[int, ...] = tuple(sorted({len(p) for p in TOPIC_PREFIX}, reverse=True))


@memo(65536)
def topics_of(word: str) -> tuple[str, ...]:
    """Tags a lower-cased word belongs to (possibly several, possibly none)."""
    hit = TOPIC_EXACT.get(word)
    if hit is None and word.endswith("s"):
        hit = TOPIC_EXACT.get(word[:-1])
    if hit is not None:
        return hit
    for n in _PREFIX_LENGTHS:  # longest stem first: "workout" is not "work"
        if n > len(word):
            continue
        hit = TOPIC_PREFIX.get(word[:n])
        if hit is not None:
            return hit
    return ()
