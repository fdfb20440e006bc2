"""Word lists the profile rules read: relations, pets, place and organisation cues.

Kept short and plain on purpose; a word missing here means a fact is not
extracted, never that a wrong one is.
"""

from __future__ import annotations

#: Relation words of people, with the gender they imply (None: either).
PERSON_RELATIONS: dict[str, str | None] = {
    **dict.fromkeys("sister mother mom mum mommy wife girlfriend daughter aunt niece grandma "
                    "grandmother granny fiancee fiancée stepmother stepsister".split(), "f"),
    **dict.fromkeys("brother father dad daddy husband boyfriend son uncle nephew grandpa "
                    "grandfather fiance fiancé stepfather stepbrother".split(), "m"),
    **dict.fromkeys("partner cousin friend neighbour neighbor roommate flatmate housemate "
                    "colleague coworker co-worker boss manager teacher coach doctor therapist "
                    "landlord landlady mentor classmate teammate kid child baby parent sibling "
                    "twin spouse grandchild grandson granddaughter niece nephew".split(), None),
}
PERSON_RELATIONS.update({"landlady": "f", "grandson": "m", "granddaughter": "f"})
#: Two-word relations, matched before the single words ("best friend").
COMPOUND_RELATIONS: dict[str, str] = {
    "best friend": "best friend", "little sister": "sister", "younger sister": "sister",
    "older sister": "sister", "big sister": "sister", "little brother": "brother",
    "younger brother": "brother", "older brother": "brother", "big brother": "brother",
    "close friend": "friend", "old friend": "friend", "childhood friend": "friend",
}
#: Animals kept as pets (the relation word of a pet is its species).
PET_SPECIES: frozenset[str] = frozenset(
    """dog cat puppy kitten parrot bird hamster rabbit bunny horse pony turtle tortoise snake
    lizard guinea pig ferret goldfish fish gecko chinchilla budgie cockatiel""".split())
#: Words that make a name a place ("Cervejaria Ramiro", "the Time Out Market").
PLACE_HEADS: frozenset[str] = frozenset(
    """restaurant cafe café bar pub bistro brasserie cervejaria tasca trattoria osteria pizzeria
    bakery market park museum gallery beach lake mountain mountains island river street road
    avenue square station airport hotel hostel church cathedral temple castle palace bridge
    garden gardens zoo stadium theatre theater cinema mall library city town village valley
    forest coast bay falls canyon resort""".split())
#: Words that make a name an organisation.
ORG_HEADS: frozenset[str] = frozenset(
    """university college school academy company startup inc ltd llc corp corporation club
    hospital clinic bank team foundation institute agency studio lab labs group association
    society council ministry department charity""".split())
#: Job titles: "I'm a nurse" is an occupation, "I'm a runner" is not.
JOBS: frozenset[str] = frozenset(
    """nurse teacher engineer developer programmer doctor lawyer designer chef cook accountant
    architect artist writer journalist scientist researcher professor student pharmacist
    dentist vet veterinarian electrician plumber carpenter mechanic pilot firefighter
    officer manager consultant analyst photographer musician painter therapist counselor
    counsellor librarian baker barista waiter waitress cashier farmer driver translator
    editor producer director actor actress dancer singer coach paramedic surgeon psychologist
    economist entrepreneur freelancer intern tutor lecturer""".split())
#: What a diet statement names.
DIETS: tuple[str, ...] = ("vegetarian", "vegan", "pescatarian", "pescetarian", "gluten-free",
                          "gluten free", "lactose intolerant", "lactose-intolerant", "keto",
                          "halal", "kosher")
#: Things owned that a profile keeps (pets are handled on their own).
POSSESSIONS: frozenset[str] = frozenset(
    "car house flat apartment bike bicycle motorbike motorcycle boat piano guitar van".split())
#: Activity verbs whose "I <verb>" / "I've been <verb>ing" is a habit worth keeping.
ACTIVITIES: frozenset[str] = frozenset(
    """run running jog jogging swim swimming hike hiking climb climbing paint painting draw
    drawing write writing cook cooking bake baking read reading knit knitting garden gardening
    play playing sing singing dance dancing practice practise practicing practising volunteer
    volunteering teach teaching cycle cycling ski skiing surf surfing skate skating keep keeping
    collect collecting grow growing study studying train training meditate meditating
    sculpt sculpting""".split())
#: Hobby nouns: "took a pottery class", "I love yoga" name a pastime, not a thing.
HOBBY_NOUNS: frozenset[str] = frozenset(
    """pottery yoga pilates art music photography chess poker football soccer basketball
    baseball tennis golf volleyball hockey rugby cricket boxing kickboxing karate judo
    taekwondo archery ballet salsa tango piano guitar violin drums clarinet flute cello
    saxophone trumpet ukulele meditation calligraphy origami crochet embroidery sewing
    woodworking gardening birdwatching astronomy poetry theatre theater improv""".split())
#: Gerunds after "went"/"go" that are errands or states, not pastimes ("went missing").
NOT_PASTIMES: frozenset[str] = frozenset(
    """going getting being doing having missing nothing something everything anything morning
    evening wedding meeting building during thing spring ring king bring sing wing string
    working""".split())
#: Verbs that never make an event ("I think", "I guess").
NOT_EVENTS: frozenset[str] = frozenset(
    """think thought guess know knew mean meant hope feel felt believe wonder wondered see saw
    agree remember forgot forget understand suppose bet wish want wanted need needed like love
    loved liked am was were be been is are have had has do did can could would should must
    may might will shall get got""".split())
#: Capitalised words that are not names when they open a sentence or stand alone.
NOT_NAMES: frozenset[str] = frozenset(
    """i i'm i've i'd i'll hi hey hello oh ok okay yes yeah no nope wow great nice cool thanks
    thank congratulations congrats sure well so also and but or then there here this that these
    those it its what when where which who whom whose why how my our your his her their we you
    they he she me him us them the a an if as at by for from in into of on to with after before
    back good glad sorry please lol haha anyway btw sounds awesome amazing absolutely definitely
    really totally love like maybe perhaps do does did is are was were be will would can could
    should have has had just not any all some one two three mr mrs ms dr today tomorrow
    yesterday tonight monday tuesday wednesday thursday friday saturday sunday january february
    march april may june july august september october november december spring summer autumn
    fall winter christmas easter try then let thankfully hopefully luckily unfortunately
    fortunately honestly actually basically seriously obviously sadly finally anyway anyways
    recently lately apparently surprisingly interestingly besides meanwhile even still
    everything nothing something everyone anyone someone life family work home""".split())
#: Verbs that may follow a sentence-initial name ("Inês eats fish", "Tomasz will help").
NAME_VERBS: frozenset[str] = frozenset(
    """is was has had eats ate loves loved likes liked lives lived works worked will would
    said says told asked wants wanted went goes got gets started starts moved moves bought
    looks looked takes took makes made plays played adopted became keeps kept enjoys enjoyed
    hates hated prefers preferred can could just also always never recommended suggested
    doesn't didn't isn't wasn't""".split())
