"""Small word lists behind the answer kinds of :mod:`memstrata.evidence.answer_types`.

Kept short on purpose: the common words chat uses for colours, jobs and units.
A word missing here makes the extractive answer abstain on a question it could
have answered; a wrong word makes it answer with something of another kind.
"""

from __future__ import annotations

COLOURS: tuple[str, ...] = tuple(
    """red blue green yellow orange purple pink black white grey gray brown beige teal navy
    turquoise silver golden gold maroon violet cyan magenta lavender lilac cream ivory olive
    burgundy crimson scarlet indigo tan khaki charcoal mint coral peach aqua amber bronze
    copper emerald ruby sapphire mauve fuchsia""".split())
COLOUR_MODIFIERS: tuple[str, ...] = tuple(
    "light dark bright pale deep pastel neon hot baby sky royal forest lime navy matte "
    "metallic".split())

#: Jobs and roles people hold (singular; a plural "s"/"es" is matched too).
OCCUPATIONS: frozenset[str] = frozenset(
    """nurse doctor physician surgeon dentist pharmacist therapist physiotherapist counselor
    counsellor psychologist psychiatrist paramedic midwife caregiver carer teacher professor
    lecturer tutor librarian principal engineer developer programmer designer architect
    accountant lawyer attorney solicitor barrister paralegal judge banker analyst consultant
    manager director ceo cto cfo founder entrepreneur chef cook baker barista bartender waiter
    waitress cashier clerk receptionist secretary salesperson salesman saleswoman realtor
    broker pilot driver mechanic electrician plumber carpenter builder painter artist musician
    singer actor actress writer author novelist journalist reporter editor photographer
    filmmaker producer scientist researcher biologist chemist physicist mathematician
    economist statistician veterinarian vet farmer gardener florist firefighter officer
    policeman policewoman detective soldier technician tailor hairdresser barber stylist
    dancer athlete coach trainer instructor translator interpreter investor administrator
    coordinator specialist supervisor ranger zookeeper animalkeeper butcher fisherman
    courier postman cleaner janitor housekeeper nanny babysitter social worker
    pastor priest minister rabbi imam librarian curator archivist auditor actuary
    underwriter recruiter marketer strategist copywriter illustrator animator
    sculptor potter jeweler jeweller optician optometrist radiologist anesthetist
    anaesthetist cardiologist pediatrician paediatrician psychotherapist sonographer
    dietitian nutritionist pharmacologist geologist astronomer botanist ecologist
    archaeologist historian linguist sociologist anthropologist philosopher""".split())

#: Distance units (regular-expression alternatives).
DISTANCE_UNITS: tuple[str, ...] = (
    r"km", r"kms", r"kilomet(?:er|re)s?", r"miles?", r"mi", r"met(?:er|re)s?", r"m",
    r"feet", r"foot", r"ft", r"yards?", r"yds?", r"blocks?", r"laps?", r"leagues?",
)

#: Units by dimension (regular-expression alternatives): a measure is only ever answered
#: with a unit of the dimension asked for.
DIMENSION_UNITS: dict[str, list[str]] = {
    "length": [r"(?:square|sq\.?)\s+(?:met(?:er|re)s?|m|feet|foot|ft|kilomet(?:er|re)s?|km|"
               r"miles?)", r"m2", r"m²", r"sqm", r"acres?", r"hectares?",
               r"cm", r"centimet(?:er|re)s?", r"mm", r"millimet(?:er|re)s?", r"m",
               r"met(?:er|re)s?", r"inch(?:es)?", r"in\.", r"feet", r"foot", r"ft", r"['’]",
               r"km", r"kilomet(?:er|re)s?", r"miles?", r"stor(?:ey|y|ies|eys)"],
    "weight": [r"kg", r"kgs", r"kilos?", r"kilograms?", r"g", r"grams?", r"lbs?", r"pounds?",
               r"oz", r"ounces?", r"stones?", r"tons?", r"tonnes?"],
    "volume": [r"ml", r"millilit(?:er|re)s?", r"l", r"lit(?:er|re)s?", r"cl", r"cups?",
               r"tablespoons?", r"tbsp", r"teaspoons?", r"tsp", r"pints?", r"gallons?",
               r"glasses", r"bottles?"],
    "temperature": [r"°\s?[cf]", r"degrees?(?:\s+(?:celsius|fahrenheit|c|f))?", r"celsius",
                    r"fahrenheit"],
    "speed": [r"mph", r"km/h", r"kph", r"kmh", r"knots?", r"(?:km|kilomet(?:er|re)s?|miles?)"
              r"\s+(?:an|per)\s+hour", r"m/s"],
    "percent": [r"%", r"percent", r"per\s+cent"],
    "data": [r"gb", r"mb", r"tb", r"kb", r"gigabytes?", r"megabytes?", r"terabytes?"],
    "energy": [r"calories", r"kcal", r"cal", r"kwh"],
}
DIMENSION_UNITS["any"] = [u for k, us in DIMENSION_UNITS.items() if k != "any" for u in us]

#: Words for the same counted thing ("kids" for "children").
UNIT_SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "child children kid kids son sons daughter daughters",
    "person people persons folk folks guest guests",
    "time times",
    "trip trips journey journeys vacation vacations holiday holidays",
    "country countries nation nations",
    "book books novel novels",
    "movie movies film films",
    "employee employees staff report reports",
    "night nights evening evenings",
    "car cars vehicle vehicles",
    "plant plants seedling seedlings",
    "race races run runs",
    "km kms kilometre kilometres kilometer kilometers",
    "mile miles mi",
    "metre metres meter meters",
    "kg kgs kilo kilos kilogram kilograms",
    "lb lbs pound pounds",
    "hour hours hr hrs",
    "minute minutes min mins",
))
#: Counted units that are measures: a count of them is said with its unit ("12 km",
#: "five days"), unlike a count of things ("Twelve" hives).
MEASURE_UNITS: frozenset[str] = frozenset(
    """km kms kilometre kilometres kilometer kilometers mile miles metre metres meter meters
    kg kgs kilo kilos kilogram kilograms lb lbs pound pounds gram grams litre litres liter
    liters ml cup cups hour hours minute minutes second seconds day days week weeks month
    months year years night nights decade decades percent degree degrees step steps lap laps
    calorie calories""".split())

#: Words for the same person a question may name ("mom" for "mother"): a line saying one
#: is about the other.
SUBJECT_SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "mother mom mum mommy mummy mama ma",
    "father dad daddy papa pa",
    "grandmother grandma granny gran nan nana",
    "grandfather grandpa granddad grandad",
))
