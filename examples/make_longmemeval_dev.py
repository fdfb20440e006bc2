"""Write ``examples/longmemeval_dev.json``: a small LongMemEval-style development set.

Every conversation, question and answer in this file was invented for memstrata;
nothing is copied from LongMemEval or from any other dataset. Only the record
schema follows LongMemEval (``question_id``, ``question_type``, ``question``,
``answer``, ``question_date``, ``haystack_session_ids``, ``haystack_dates``,
``haystack_sessions``, ``answer_session_ids``), so that the file exercises the
same reader and the same retrieval evaluation as the real benchmark::

    memstrata eval retrieval --dataset examples/longmemeval_dev.json --format longmemeval

The set has 36 questions, six per question type, three of them abstention
questions (ids ending in ``_abs``) whose answer is not in the haystack. Each
question's haystack holds its evidence session(s) plus filler sessions drawn
from a shared pool of hand-written chats, placed at dates spread over several
months. As in LongMemEval, the user mentions personal facts in passing in the
middle of ordinary requests, and the assistant's replies are long and generic,
so the evidence is a small part of its session and is worded differently from
the question.

The output is deterministic: the same seed gives byte-identical JSON.

Usage::

    python examples/make_longmemeval_dev.py [--output PATH] [--seed N]

Conversations are written below in a small text format: a session starts with a
``=== <id> | <tags>`` line (filler only); each message starts with ``U:`` (user)
or ``A:`` (assistant), with ``U!:`` / ``A!:`` marking the messages that hold the
evidence (``has_answer``). A message's continuation lines are joined with a
space, except list items (lines starting ``- `` or ``1. ``) and the first line
after a list, which start a new line.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "longmemeval_dev.json"
DEFAULT_SEED = 20240611
#: Haystack sizes (evidence plus filler sessions), inclusive.
HAYSTACK_MIN, HAYSTACK_MAX = 20, 30

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_LIST_ITEM = re.compile(r"^(- |\d+\. )")
_MESSAGE = re.compile(r"^(U|A)(!?): ?(.*)$")

Message = dict[str, Any]


@dataclass(frozen=True)
class Filler:
    """One shared filler chat, with the kinds of personal facts it states."""

    session_id: str
    tags: frozenset[str]
    messages: list[Message]


@dataclass(frozen=True)
class Evidence:
    """One session holding (part of) a question's answer, at a fixed date."""

    when: str
    """``YYYY/MM/DD HH:MM``."""
    topic: str
    text: str


@dataclass(frozen=True)
class Spec:
    """One question, its evidence, and how to build its haystack."""

    qid: str
    qtype: str
    question: str
    answer: str
    asked: str
    """``YYYY/MM/DD HH:MM``."""
    start: str
    """First day (``YYYY/MM/DD``) on which filler sessions may fall."""
    evidence: list[Evidence]
    #: Filler tags whose personal facts could contradict this question's answer.
    avoid: frozenset[str] = field(default_factory=frozenset)


def parse_messages(text: str) -> list[Message]:
    """Messages of one session written in the module's text format."""
    out: list[Message] = []
    after_item = False
    for raw in text.strip().splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _MESSAGE.match(line)
        if m:
            msg: Message = {"role": "user" if m.group(1) == "U" else "assistant",
                            "content": m.group(3)}
            if m.group(2):
                msg["has_answer"] = True
            out.append(msg)
            after_item = False
        elif not out:
            raise ValueError(f"text before the first message: {line!r}")
        else:
            is_item = bool(_LIST_ITEM.match(line))
            out[-1]["content"] += ("\n" if is_item or after_item else " ") + line
            after_item = is_item
    return out


def parse_fillers(text: str) -> list[Filler]:
    """The filler pool: ``=== id | tag, tag`` headers, each followed by messages."""
    fillers: list[Filler] = []
    for block in re.split(r"^=== ", text.strip(), flags=re.MULTILINE):
        if not block.strip():
            continue
        header, _, body = block.partition("\n")
        sid, _, tags = header.partition("|")
        fillers.append(Filler(session_id=sid.strip(),
                              tags=frozenset(t.strip() for t in tags.split(",") if t.strip()),
                              messages=parse_messages(body)))
    return fillers


def fmt_date(d: datetime) -> str:
    """LongMemEval's date form: ``2023/05/20 (Sat) 02:21``."""
    return f"{d:%Y/%m/%d} ({_WEEKDAYS[d.weekday()]}) {d:%H:%M}"


def parse_when(s: str) -> datetime:
    return datetime.strptime(s, "%Y/%m/%d %H:%M")


# ---------------------------------------------------------------------------
# The shared filler pool. Tags name the kinds of personal facts a chat states,
# so that a question can keep out filler that would contradict its answer.
# ---------------------------------------------------------------------------

FILLER_TEXT = r"""
=== s-cooking-01 | food
U: I need a stir-fry sauce I can make from pantry stuff. I have soy sauce, honey, garlic, rice vinegar and cornstarch. My partner can't stand cilantro so please leave that out of any garnish ideas.
A: You can make a very good all-purpose stir-fry sauce with exactly those ingredients. Whisk together 3 tablespoons of soy sauce, 1 tablespoon of honey, 1 tablespoon of rice vinegar, 2 minced garlic cloves and 1 teaspoon of cornstarch dissolved in 3 tablespoons of water. Add it to the pan in the last minute of cooking and stir until it turns glossy and coats everything. For garnish, sliced scallions, toasted sesame seeds or a few crushed peanuts all work well without any cilantro.
U: How much does that make? I usually cook for two with leftovers for lunch.
A: That amount covers roughly four servings of vegetables and protein, so it should be right for dinner for two plus a lunch portion. If you like your stir-fry saucy, double it, since the cornstarch will keep it from getting watery. You can also mix a larger batch without the cornstarch and keep it in a jar in the fridge for about a week; just add the slurry when you cook.
U: Perfect, thanks. Any tip to keep the broccoli from going soggy?
A: Cut the florets small and even, make sure they are completely dry, and cook them in a very hot pan in a single layer so they sear instead of steaming. If you are cooking a lot, do it in batches and set each batch aside. Another trick is to blanch the broccoli for 60 seconds first, then stir-fry it briefly at the end, which keeps it bright green and crisp.

=== s-cooking-02 | food, commute
U: I'm trying to meal prep lunches on Sundays so I stop buying sandwiches. What keeps well for four or five days?
A: Grain bowls are the classic answer because grains, roasted vegetables and sturdy proteins all hold up well in the fridge. A few combinations that keep for four to five days:
- Farro with roasted sweet potato, chickpeas and a tahini dressing kept on the side
- Brown rice with teriyaki chicken thighs, edamame and shredded cabbage
- Lentil salad with feta, cucumber, red onion and a lemon vinaigrette
- Quinoa with black beans, corn, peppers and a lime dressing
Keep dressings and anything crunchy in separate small containers so nothing gets soggy.
U: Is it safe to keep cooked chicken that long?
A: Cooked chicken is generally considered good for three to four days in the fridge, so for a five-day plan it is safer to freeze the last one or two portions and move them to the fridge the night before. Cool the chicken quickly after cooking, refrigerate it within two hours, and keep your fridge at or below 4 degrees Celsius. Beans, lentils and roasted vegetables are more forgiving, which is why vegetarian bowls are popular for the end of the week.
U: Good idea. Which containers do you recommend?
A: Glass containers with snap-lock lids are a good choice because they do not stain, can go in the microwave and are easy to clean. Choose ones with two compartments if you want to keep a warm component separate from a cold one. If you carry them on a commute, lighter BPA-free plastic is also fine, as long as you do not microwave food in containers that are scratched or cloudy.

=== s-cooking-03 | food
U: My banana bread always comes out dense and a bit gummy in the middle. I follow the recipe exactly. What am I doing wrong?
A: Dense, gummy banana bread usually comes from one of a few things. Overmixing after adding the flour develops gluten, so fold just until no dry streaks remain. Too much banana adds moisture and weight; measure the mashed banana instead of counting fruit, since bananas vary a lot in size. An oven that runs cool can leave the center underbaked, so an oven thermometer is worth checking. Finally, make sure your baking soda is fresh, because old leavener will not give much lift.
U: I do use like four huge bananas. The recipe says three.
A: That is very likely the main cause. Most loaf recipes are built around roughly 1 to 1 1/4 cups of mashed banana, and four large bananas can easily give you close to two cups. The extra water and sugar make the crumb heavy and slow to bake through. Measure the mash next time and freeze any leftover banana for smoothies or the next loaf.
U: And how do I know it's done?
A: Insert a skewer into the very center; it should come out with a few moist crumbs but no wet batter. The top should spring back when pressed lightly, and if you have an instant-read thermometer, the middle should read about 95 to 99 degrees Celsius. If the top browns before the middle is set, tent the loaf loosely with foil for the last 15 minutes.

=== s-cooking-04 | food
U: I'm hosting brunch for six friends on Saturday and I want to make eggs Benedict. Last time my hollandaise split. How do I save it if it happens again?
A: A split hollandaise can almost always be rescued. Put a fresh egg yolk or a tablespoon of warm water in a clean bowl, then whisk the broken sauce into it a little at a time, as slowly as you added the butter the first time. The new emulsifier pulls the fat back into suspension. To prevent splitting, keep the heat gentle, add the butter slowly, and take the bowl off the heat if the sauce starts to look oily at the edges.
U: Can I make it ahead? I don't want to be stuck at the stove while everyone's there.
A: Yes. Make it up to an hour ahead and keep it in a pre-warmed thermos or in a bowl set over a pot of warm, not simmering, water. Whisk it occasionally and add a teaspoon of warm water if it thickens too much. A blender hollandaise is also a good option for hosting, since it takes about two minutes and is very forgiving.
U: And poaching twelve eggs at once?
A: Poach them the night before or an hour ahead, slide them into a bowl of ice water as they finish, and keep them in the fridge. Right before serving, reheat them in a pan of hot water for about 60 seconds. Restaurants use this exact method, and it means you only have to toast the muffins and warm the ham at the last minute.
U: What should I serve to drink? A couple of my friends don't drink alcohol.
A: A small drinks station keeps things easy. Offer a pitcher of fresh orange juice and a bottle of sparkling wine so people can make their own mimosas, plus a non-alcoholic option that feels just as festive, such as sparkling water with grapefruit juice and a sprig of rosemary, or iced tea with lemon and mint. Good coffee is essential for brunch, so make a big pot or a cafetiere before guests arrive. Label the non-alcoholic pitcher so nobody has to ask.

=== s-cooking-05 | food, kids
U: My son is seven and a really picky eater. I'm running out of lunchbox ideas that aren't just a ham sandwich every day.
A: Picky eaters often do better with lunches that look like a snack plate, where they can choose among small portions. Some ideas that tend to work for that age:
- Pinwheels made from a tortilla with cream cheese and turkey, cut into rounds
- Mini pasta salad with their favorite shape, a little cheese and peas
- A build-your-own plate of crackers, cheese cubes, apple slices and grapes
- Leftover pizza or homemade mini muffins with grated carrot or zucchini
Rotate two or three new items in with things he already likes so the lunch never feels entirely unfamiliar.
U: He likes pasta, so the pasta salad could work. Does it need to be kept cold?
A: If it contains cheese, meat or a mayonnaise-based dressing, it should be kept cool, so pack it with a small ice pack in an insulated lunch bag. An oil-based dressing is more stable than a creamy one. You can also freeze a small juice box and use it as an ice pack that will be thawed and ready to drink by lunchtime.

=== s-travel-01 | travel
U: I'm thinking about a week in Scotland at some point in October. What should I pack? I tend to overpack.
A: October in Scotland is cool and changeable, with temperatures around 7 to 13 degrees Celsius and frequent rain, so layers matter more than quantity. A compact list could be:
- A waterproof jacket with a hood and a warm fleece or light down layer
- Two pairs of trousers, one quick-drying, and one pair of comfortable waterproof walking shoes
- Three or four tops you can layer, plus a thermal base layer for the Highlands
- A hat, gloves and a small umbrella for cities
Plan on doing laundry once mid-week and you can fit everything into a carry-on.
U: Is it worth renting a car or should I stick to trains?
A: It depends on where you want to go. Edinburgh and Glasgow are easy without a car, and trains also reach Inverness and the West Highland line to Fort William, which is a beautiful ride. If you want to explore Skye, Glencoe or the northern coast at your own pace, a car gives you much more flexibility, since buses there are infrequent. Many visitors combine the two: trains between cities, then a short car rental for the Highlands.
U: Good to know. Are single-track roads hard to drive?
A: They are manageable once you know the etiquette. Pull into a passing place on your left to let oncoming cars through, or wait opposite one on your right, and let faster drivers behind you overtake. Drive slowly, watch for sheep, and avoid driving them after dark if you are not used to them.
U: Do I need much cash or can I pay by card everywhere?
A: Cards and contactless payments are accepted almost everywhere in Scotland, including most small cafes, pubs and many market stalls. It is still sensible to carry a small amount of cash for rural areas, honesty boxes at farm shops, parking machines and tips. Check whether your bank charges foreign transaction fees, and if it does, a travel-friendly card without fees will save you money over a week.

=== s-travel-02 | travel, job
U: I have a work trip to Singapore next month with a 13-hour flight. How do I deal with jet lag? I have to present on the second day.
A: With a presentation on day two, it is worth shifting your schedule a little before you go. Move your bedtime an hour or two later or earlier for a few days toward Singapore time, and on the flight, set your watch to the destination time and sleep or stay awake accordingly. When you land, get as much daylight as possible during the local morning and avoid long naps; a 20-minute nap is fine if you are struggling. Stay hydrated, keep alcohol to a minimum on the plane, and save caffeine for the local morning.
U: Should I take melatonin?
A: Some travelers find a low dose of melatonin, taken around local bedtime for the first few nights, helps them fall asleep on the new schedule. It is generally considered safe for short-term use, but it can interact with some medications, so check with a pharmacist or doctor if you take anything regularly. Light exposure and consistent meal times still make the biggest difference.
U: Thanks. Any tips for staying sharp during the presentation itself?
A: Schedule a short walk outside before you present, eat a light meal rich in protein rather than a heavy lunch, and have water at hand. Rehearse your opening two minutes a few extra times, since those are the hardest part when you are tired. If you can choose the time slot, late morning local time is usually when jet-lagged travelers feel most alert.

=== s-travel-03 | travel, car
U: We want to do a road trip through the Utah national parks in spring. We have nine days. How would you split them?
A: Nine days is a good amount for Utah's five national parks. One possible route, starting and ending in Las Vegas or Salt Lake City:
1. Days 1 and 2: Zion, including the Riverside Walk and, if you are comfortable with heights, Angels Landing with a permit
2. Day 3: Bryce Canyon, with the Navajo Loop and Queen's Garden trails
3. Day 4: drive Scenic Byway 12 to Capitol Reef
4. Days 5 to 7: Moab as a base for Arches and Canyonlands
5. Days 8 and 9: drive back with a stop at Goblin Valley or Dead Horse Point
Book lodging early, because Moab and Springdale fill up quickly in spring.
U: Do we need a special car for any of this?
A: A regular car is fine for all the main park roads and scenic drives. You would only need a high-clearance or four-wheel-drive vehicle for backcountry routes such as the White Rim Road or the Cathedral Valley loop. Carry plenty of water, keep the tank above half in remote stretches, and download offline maps because cell coverage is patchy.

=== s-travel-04 | travel, finance
U: Is travel insurance actually worth it? I'm booking a couple of trips this year and the insurance adds almost 8 percent to each booking.
A: It depends on how much you would lose if something went wrong and what you already have. Travel insurance is usually worth it for expensive, non-refundable trips, for travel abroad where your health coverage does not apply, and for trips with tight connections. It is often not worth buying for cheap domestic trips or for bookings that are already flexible or refundable. Also check your credit card: many premium cards include trip cancellation, delay and baggage coverage when you pay with them.
U: What should I look for in the policy?
A: Read the exclusions before the price. Key points to check:
- Emergency medical and evacuation limits, especially for trips abroad
- Which reasons for cancellation are covered, and whether pre-existing conditions are excluded
- Delay coverage thresholds, for example whether benefits start after 6 or 12 hours
- How claims are filed and what receipts you need
A "cancel for any reason" upgrade costs more but refunds part of your trip regardless of the reason.

=== s-coding-01 | coding
U: I have a pandas DataFrame of orders with columns customer_id, order_date and amount. How do I get each customer's total and average order amount?
A: You can do that in one step with groupby and agg:
- totals = df.groupby("customer_id")["amount"].agg(total="sum", average="mean", orders="count").reset_index()
This gives one row per customer with the sum, the mean and the number of orders. If you want the result sorted by biggest spenders, add .sort_values("total", ascending=False). Named aggregation like this keeps the output column names readable without renaming them afterwards.
U: Nice. And if I only want orders from 2023?
A: Filter before grouping. Make sure order_date is a real datetime first with df["order_date"] = pd.to_datetime(df["order_date"]), then use df[df["order_date"].dt.year == 2023] as the input to the same groupby. Filtering first is both faster and clearer than filtering the aggregated result. If you need several years side by side, group by both customer_id and df["order_date"].dt.year instead.
U: Great, that worked. Is a list comprehension faster than a loop for building a list in plain Python?
A: Usually yes, modestly. A list comprehension avoids repeatedly looking up and calling the append method, so it is often 20 to 50 percent faster for simple transformations. The bigger benefit is readability for simple cases. For complex logic with several branches, a regular loop can be clearer, and for numeric work on large arrays, vectorized pandas or NumPy operations will be far faster than either.
U: One more: I have a second DataFrame with customer names. How do I attach the names to the totals?
A: Use merge on the shared key: totals.merge(customers[["customer_id", "name"]], on="customer_id", how="left"). A left join keeps every row of totals even if a customer is missing from the names table, in which case the name is NaN, which makes gaps easy to spot. If the key has different names in the two tables, use left_on and right_on instead. Check the row count before and after, because duplicate keys in the right table would multiply rows.

=== s-coding-02 | coding, job
U: My team uses GitHub and there's a debate about rebase versus merge for feature branches. Can you explain the tradeoff simply?
A: Both integrate changes, but they record history differently. Merging keeps every commit exactly as it happened and adds a merge commit, so history is complete but can look tangled. Rebasing replays your commits on top of the latest main branch, which gives a clean, linear history but rewrites commit hashes. The common rule is: rebase your own local or unshared branches to tidy them up, and never rebase a branch that other people have already based work on.
U: What about squash merging on pull requests?
A: Squash merging combines all the commits of a pull request into a single commit on main. It keeps main very tidy and makes each feature easy to revert, which is why many teams use it by default. The downside is that you lose the individual commits from the branch, so detailed history of how the feature evolved lives only in the pull request. It works best when pull requests are small and focused.
U: OK. How do I undo a rebase that went wrong?
A: Git keeps a record of where your branch pointed before the rebase. Run git reflog, find the entry just before the rebase started, and reset to it with git reset --hard followed by that reference, such as HEAD@{5}. Make sure you have no uncommitted work you want to keep before a hard reset. If the rebase is still in progress, git rebase --abort is simpler and returns you to the starting point.

=== s-coding-03 | coding
U: I need a SQL query that gives me the top three customers by revenue for each month. We're on PostgreSQL.
A: Window functions make this straightforward. First aggregate revenue per customer per month, then rank within each month:
- WITH monthly AS (SELECT date_trunc('month', order_date) AS month, customer_id, SUM(amount) AS revenue FROM orders GROUP BY 1, 2)
- SELECT month, customer_id, revenue FROM (SELECT *, RANK() OVER (PARTITION BY month ORDER BY revenue DESC) AS r FROM monthly) t WHERE r <= 3 ORDER BY month, r;
RANK gives ties the same rank, so a month could return more than three rows; use ROW_NUMBER if you want exactly three.
U: It's a bit slow on our big table. Any index suggestions?
A: An index on orders (order_date, customer_id) including amount can help, especially if you also filter by a date range, because PostgreSQL can then read only the relevant slice. Check the plan with EXPLAIN ANALYZE to see whether it is doing a sequential scan. For reports that run often over historical data, a materialized view of the monthly aggregate, refreshed nightly, is usually the biggest win.

=== s-coding-04 | coding
U: In JavaScript, what's the cleanest way to handle errors with async/await when I'm calling three APIs in a row?
A: Wrap the sequence in a single try/catch if any failure should stop the whole operation, and rethrow or return a clear error. If the calls are independent, run them in parallel with Promise.all inside one try block, which is faster than awaiting them one by one. When you want results even if some fail, Promise.allSettled returns each outcome with a status so you can handle failures individually. Avoid wrapping every single await in its own try/catch unless you really need different recovery for each one.
U: If one of the requests hangs, how do I time it out?
A: Use an AbortController with fetch. Create the controller, pass controller.signal in the fetch options, and call controller.abort() from a setTimeout after your chosen limit, clearing the timer when the request finishes. In newer runtimes you can simply pass AbortSignal.timeout(5000) as the signal. The aborted fetch rejects with an AbortError, which your catch block can recognize and turn into a friendly timeout message.
U: Thanks, that's much cleaner than what I had.
A: Glad it helps. One more habit worth adopting is attaching context when you rethrow, for example throw new Error("loading invoices failed", { cause: err }), so your logs show both the high-level step and the original error.
U: Should I retry failed requests automatically?
A: Retrying is sensible for temporary failures, such as timeouts, network errors and 502, 503 or 429 responses, but not for errors like 400 or 404 that will fail again. Use exponential backoff with jitter, for example waiting roughly 250 milliseconds, then 500, then 1,000, with a little randomness, and cap the number of attempts at three or four. Only retry requests that are safe to repeat, such as GET requests or operations protected by an idempotency key, so you never create a duplicate order or payment.

=== s-coding-05 | coding
U: My Docker Compose setup for Postgres loses all the data every time I run docker compose down. What am I missing?
A: The database files are being stored inside the container's writable layer, which is deleted with the container. Declare a named volume and mount it at Postgres's data directory:
- under the db service: volumes: - pgdata:/var/lib/postgresql/data
- at the top level: volumes: pgdata:
Named volumes survive docker compose down. They are only removed if you run docker compose down -v, so avoid the -v flag unless you really want a clean database.
U: And how do I seed it with some test data the first time?
A: The official Postgres image runs any .sql or .sh files placed in /docker-entrypoint-initdb.d when it initializes an empty data directory. Mount a local folder there, for example ./seed:/docker-entrypoint-initdb.d, and put your schema and seed scripts in it, named so they sort in the order you want. Keep in mind they only run on first initialization; if the volume already holds data, they are skipped.
U: Got it, that explains why my changes to the seed file did nothing.
A: Exactly. To rerun them during development, remove the volume with docker compose down -v and start again, or apply the changed script manually with psql. Many teams move to a migration tool once the schema starts changing often, so that changes apply to existing databases too.

=== s-coding-06 | coding
U: Can you give me a regex to check that a string looks like a UK postcode? It's just for a quick front-end check.
A: For a light front-end check, this pattern covers the standard formats: ^[A-Z]{1,2}[0-9][A-Z0-9]? ?[0-9][A-Z]{2}$ with the case-insensitive flag. It accepts forms like SW1A 1AA, M1 1AE and B33 8TH, with or without the space. It does not verify that the postcode actually exists, so treat it as a typo catcher and validate properly on the server or with an address lookup service.
U: Should I normalize the input before checking?
A: Yes. Trim whitespace, convert to upper case and collapse multiple spaces into one before testing. You can then insert the single space before the final three characters when storing it, which gives you a consistent format. Normalizing first also lets you keep the regex simpler and avoids rejecting valid input over harmless differences.
U: Makes sense. Thanks!
A: You are welcome. If you later expand to other countries, consider a library that knows each country's postal format instead of collecting regexes by hand, since the rules vary widely and change from time to time.

=== s-fitness-01 | fitness
U: I'm 38 and haven't lifted weights since college. I want to start strength training three days a week. Where should I begin?
A: A full-body routine three times a week is an excellent way to restart. Each session could include one movement from each pattern:
- A squat or leg press
- A hinge such as a Romanian deadlift or hip thrust
- A push such as push-ups or dumbbell bench press
- A pull such as rows or lat pulldowns
- A carry or plank for the core
Do two or three sets of 8 to 12 reps with a weight that leaves two reps in reserve, and add a little weight or a rep each week.
U: How long until I see results?
A: Most beginners notice they are stronger within three to four weeks, mostly because the nervous system learns the movements. Visible changes in muscle usually take eight to twelve weeks of consistent training, good protein intake and enough sleep. Track your lifts in a notebook or an app, because seeing the numbers go up is very motivating in the early months.
U: Should I be sore after every workout?
A: No. Some soreness is normal in the first couple of weeks or after a new exercise, but it is not a measure of a good workout. If you are consistently very sore, reduce the volume slightly. Progress in the weights you lift is a far better signal that the program is working.
U: What should I do on the days in between?
A: Rest days are when your muscles adapt, so they matter as much as the training days. Light activity is ideal: walking, easy cycling, swimming or a short mobility routine keep you moving without adding fatigue. Try to get seven to nine hours of sleep and keep protein intake steady across the week. If you feel like doing more, a short session of core work or stretching is fine, as long as you feel fresh for the next strength workout.

=== s-fitness-02 | fitness, running
U: I started running a few weeks ago and now I have pain along the inside of my shins. Is this shin splints? Should I stop?
A: Pain along the inner edge of the shinbone that appears during or after running is very often medial tibial stress syndrome, commonly called shin splints. It usually comes from increasing mileage too quickly. Cut back your running volume, and replace some runs with cycling or swimming for a week or two. Ice after activity, gentle calf stretches and strengthening the calves and hips can help. If the pain is sharp in one spot, hurts at rest, or gets worse, see a doctor to rule out a stress fracture.
U: Could my shoes be the problem?
A: They can contribute. Very worn shoes, or shoes that do not suit your foot and stride, change how load is absorbed. A running store can watch you run and suggest a few options to try. Still, shoes are rarely the whole story; the biggest factor is usually how quickly you built up, so follow the rule of increasing weekly distance by no more than about ten percent.

=== s-fitness-03 | fitness, commute
U: I sit at a desk all day and my hamstrings and hips are super tight. Can you suggest a short yoga routine for the evening?
A: Here is a gentle 15-minute sequence aimed at hips and hamstrings:
1. Cat-cow for one minute to wake up the spine
2. Low lunge, one minute per side, for the hip flexors
3. Half splits, one minute per side, for the hamstrings
4. Pigeon pose or figure-four on your back, 90 seconds per side
5. Seated forward fold with a bent knee, two minutes
6. Legs up the wall for three to five minutes to finish
Breathe slowly and never force a stretch into pain.
U: Is it better to stretch in the morning or evening?
A: Both work; consistency matters more than timing. Muscles are usually a bit warmer and more pliable later in the day, so evening sessions can feel easier. A short morning routine can ease stiffness before a long day of sitting. Many people with desk jobs do five minutes in the morning and a longer session in the evening, plus standing up every half hour.

=== s-fitness-04 | fitness, food
U: How much protein should I eat a day if I'm trying to build some muscle? I weigh about 70 kg.
A: Research on people doing resistance training generally supports about 1.6 grams of protein per kilogram of body weight per day, with benefits leveling off somewhere around 2.2 g/kg. At 70 kg, that is roughly 110 to 150 grams a day. Spreading it across three or four meals with 25 to 40 grams each seems to work better than one huge serving. If you have kidney disease or another medical condition, check with your doctor before raising protein intake.
U: That sounds like a lot. What are easy ways to get there?
A: A few swaps add up quickly. Greek yogurt or cottage cheese at breakfast gives 20 grams or more, a can of tuna or a chicken breast at lunch another 30 to 40, and lentils, tofu or fish at dinner fill the rest. Snacks such as edamame, a glass of milk or a protein shake can cover the gap. Writing down what you eat for a few days usually shows that you are closer than you think.

=== s-garden-01 | garden
U: My fiddle leaf fig has big yellow patches on the lower leaves and a couple of them dropped. It's by a north window. What's going on?
A: Yellowing and dropping lower leaves on a fiddle leaf fig usually point to overwatering or too little light, and a north window is often on the dim side for this plant. Check the soil: if it is still damp a few centimeters down a week after watering, the roots may be staying too wet. Let the top third of the soil dry out before watering again, make sure the pot drains freely, and move the plant closer to a brighter east or south window if you can.
U: Should I cut off the yellow leaves?
A: Yes, you can remove leaves that are mostly yellow, since they will not recover and the plant will drop them anyway. Cut cleanly at the stem with clean scissors. Leave leaves that are only slightly discolored. New growth at the top over the next couple of months will tell you whether the changes in watering and light are working.
U: Thanks, I'll move it to the living room.
A: That sounds like a good plan. Fiddle leaf figs dislike being moved often, so expect a week or two of sulking, and then pick a spot and keep it there. Rotating the pot a quarter turn every couple of weeks keeps the plant growing evenly toward the light.

=== s-garden-02 | garden
U: I'm building two raised beds this weekend, each about 1.2 by 2.4 meters and 30 cm deep. What soil mix should I use and how much do I need?
A: Each bed holds about 1.2 x 2.4 x 0.3 = 0.86 cubic meters, so roughly 1.7 cubic meters for both, or about 1,700 liters. A common mix is about 60 percent good topsoil, 30 percent compost and 10 percent something for drainage and aeration such as fine bark or perlite. Ordering in bulk from a landscape supplier is usually much cheaper than bagged soil for this volume. Fill the beds slightly above the rim, because the soil will settle over the first few weeks.
U: Should I put cardboard at the bottom?
A: Plain brown cardboard at the bottom is a good way to smother grass and weeds underneath; it breaks down within a season. Remove any tape and glossy labels first. If you have burrowing pests like moles or gophers, staple hardware cloth to the bottom of the frame before adding the cardboard.
U: What should I plant first in them?
A: For the first season, choose easy, productive crops. Lettuce, radishes, spinach and peas can go in early while it is still cool, followed by bush beans, zucchini, herbs and tomatoes once the risk of frost has passed. Plant tall crops on the north side so they do not shade shorter ones. Adding a layer of mulch after planting keeps moisture in and reduces weeding.

=== s-garden-03 | garden, food
U: I live in a small flat without a garden. Is there a way to compost kitchen scraps indoors without it smelling?
A: Yes, two popular options work well in small spaces. Bokashi uses a sealed bucket and an inoculated bran to ferment scraps, including small amounts of meat and dairy, and it does not smell bad if the lid stays closed. After two weeks the fermented scraps need to be buried or added to a community compost bin. A small worm bin is another option that produces rich castings for houseplants, but it needs a bit more attention to moisture and what you feed it.
U: Where do I put the bokashi stuff when it's done if I don't have soil?
A: Many cities have community gardens or compost drop-off points that accept pre-compost. You can also mix it into a large tub of old potting soil, leave it for a few weeks and then use that soil for houseplants or balcony pots. Some people give it to friends with gardens, who tend to be happy to take it.
"""

FILLER_TEXT += r"""
=== s-finance-01 | finance
U: Can you explain the difference between a Roth IRA and a traditional IRA? I'm 31 and just starting to save for retirement.
A: The main difference is when you pay tax. With a traditional IRA, contributions may be tax-deductible now, the money grows tax-deferred, and withdrawals in retirement are taxed as income. With a Roth IRA, you contribute money you have already paid tax on, and qualified withdrawals in retirement are tax-free. If you expect your tax rate to be higher in retirement than it is now, the Roth usually comes out ahead, which is often the case for people early in their careers.
U: Are there income limits?
A: Yes. Roth IRA contributions phase out above certain income levels, which are adjusted every year, so check the current limits for your filing status. Traditional IRA contributions have no income limit, but the deduction phases out if you or your spouse have a workplace retirement plan and earn above certain thresholds. Higher earners sometimes use a so-called backdoor Roth, which involves a nondeductible traditional contribution followed by a conversion.
U: And what should I actually invest in inside the account?
A: For most people starting out, a low-cost, broadly diversified index fund is a sensible core, for example a total market fund or a target-date fund for the year you expect to retire. Target-date funds handle the mix of stocks and bonds for you and become more conservative over time. Keep an eye on expense ratios, since fees compound just like returns.
U: How much should I be putting in each year?
A: A common guideline is to save around 15 percent of your gross income for retirement, including any employer contributions, though any amount is a good start. If your employer offers a match on a workplace plan, contribute at least enough to get the full match first, since it is effectively free money. After that, an IRA is a good next step, up to the annual contribution limit. Increasing your contribution by one percent each time you get a raise is a painless way to build up.

=== s-finance-02 | finance, budget
U: I have two credit cards with balances, one at 24 percent interest and a smaller one at 18 percent. Should I pay off the small one first to feel progress, or the high-interest one?
A: These are the two classic strategies. The avalanche method pays the minimum on every card and puts all extra money toward the highest interest rate first, which saves the most money. The snowball method targets the smallest balance first, which gives quick wins and can keep you motivated. Mathematically the avalanche always wins, but the best plan is the one you will stick to, so if the small card could be cleared in a month or two, knocking it out first is a reasonable compromise.
U: What about a balance transfer card?
A: A balance transfer card with a 0 percent introductory rate can save a lot if you can pay the balance off within the promotional period, often 12 to 21 months. Watch for the transfer fee, usually 3 to 5 percent of the amount moved, and know the rate that applies after the promotion. It only helps if you stop adding new debt to the old cards, so many people put the old cards away once the balance is moved.

=== s-finance-03 | finance, job
U: I just got my first payslip at a new place and the tax withheld looks higher than I expected. How do I read this thing?
A: A pay stub usually has three main parts. Gross pay is what you earned before anything comes out. Deductions are split into taxes, such as income tax and social security or national insurance, and other items such as pension contributions, health insurance or union dues. Net pay is what actually lands in your bank account. Look at the year-to-date column too, because the first payslip at a new employer sometimes uses an emergency or default tax code until your details are processed.
U: How would I know if the tax code is wrong?
A: Compare the code or withholding status on the stub with what you expect for your situation, and check the tax authority's online account if your country offers one, since it usually shows the code your employer was told to use. If it looks wrong, contact the tax authority or your payroll team; overpaid tax is normally refunded through later payslips or at the end of the tax year once the code is corrected.

=== s-finance-04 | finance, kids
U: We want to start saving for our kids' college. Our daughter is four and our son is one. Is a 529 plan the way to go?
A: A 529 plan is one of the most popular choices in the US for college savings. Earnings grow tax-free and withdrawals are tax-free when used for qualified education expenses, and many states give a state income tax deduction for contributions to their own plan. You can open one account per child, or one account and change the beneficiary later. Starting when they are this young gives compounding a long runway.
U: How much should we put in every month?
A: It depends on your goal and other priorities, such as retirement savings and an emergency fund, which should come first. As a rough example, saving 200 dollars a month per child from age one, at a 6 percent average return, would grow to roughly 75,000 dollars by age eighteen. Many families aim to cover a portion of costs rather than everything, and increase contributions as their income grows.
U: What if one of them doesn't go to college?
A: You have several options. You can change the beneficiary to a sibling or another family member, keep the money for graduate school or trade programs, or use some of it for certain apprenticeship costs. Under newer rules, a limited amount may also be rolled into a Roth IRA for the beneficiary after the account has been open for many years. Withdrawals for non-qualified uses owe income tax and a 10 percent penalty on the earnings only.

=== s-parenting-01 | kids
U: My daughter just turned three and the tantrums are getting intense, especially when we leave the playground. Any strategies?
A: Transitions are one of the hardest things for three-year-olds, so you are not alone. A few approaches that often help:
- Give a warning before leaving, such as five more minutes and then two more slides
- Offer a small choice: hop to the car or walk like a dinosaur
- Name the feeling calmly, for example you are sad because you love the swings
- Keep your own voice quiet and your message short, and follow through
Once she has calmed down, a quick hug and moving on without a long lecture works better than discussing it at length.
U: What if she completely melts down in public?
A: Stay close, keep her safe, and say very little until the storm passes; reasoning rarely works in the middle of a meltdown. It is fine to pick her up and move to a quieter spot. Try not to worry about onlookers, since most parents have been there. Afterwards, keep your routine predictable, because tired and hungry toddlers have far more meltdowns.
U: She has also started biting other kids at daycare. The teachers mentioned it twice this week.
A: Biting is common at this age, especially when children feel frustrated, overwhelmed or cannot find the words quickly enough. Work with the daycare on a consistent response: calmly and firmly say biting hurts, attend to the other child first, and then help her use words or another action, such as stomping her feet or squeezing a toy. Watch for patterns, for example biting when she is tired or when a space is crowded, since preventing those situations is often the most effective step.
U: Should we punish her at home for it?
A: Punishing at home, hours after the event, usually does not work for three-year-olds, because they cannot connect it to what happened earlier. What helps more is practicing at home: reading picture books about feelings, role-playing what to do when someone takes a toy, and praising her when she handles frustration well. Most children grow out of biting as their language skills improve over the next several months.

=== s-parenting-02 | kids
U: My nine-year-old wants more screen time and we argue about it every day. How much is reasonable?
A: There is no single right number, and most pediatric guidance now focuses on the quality of screen time and what it displaces rather than a strict limit. Make sure sleep, homework, physical activity and time with family come first, and fit screens around them. Many families find that a clear, predictable rule ends the daily negotiation, for example screens after homework until dinner on school days and a longer window on weekends.
U: Should I let him have a phone?
A: Many families wait until around the start of middle school, and some start with a basic phone or a smartwatch that only calls and texts. If you do give him a smartphone, set it up together with parental controls, keep devices out of the bedroom at night, and agree on rules in advance. Talking openly about what he sees online matters more than any app you install.

=== s-parenting-03 | kids, routine
U: Our baby is four months old and suddenly wakes up every hour at night after sleeping pretty well. Is this the four-month sleep regression?
A: It very likely is. Around four months, babies' sleep cycles mature and they start to wake more fully between cycles, so a baby who slept well can suddenly wake often. It usually settles within two to six weeks. A consistent bedtime routine, a dark room, and putting her down drowsy but awake can help her learn to link cycles on her own.
U: What could a bedtime routine look like at this age?
A: Keep it short and the same every night, about 20 to 30 minutes. For example: a warm bath, pajamas and a fresh diaper, a feed in a dim room, a short song or book, then into the crib. The order matters more than the individual steps, because the sequence itself becomes the cue for sleep. Try to start it at roughly the same time each evening.

=== s-parenting-04 | kids, car
U: My 16-year-old just got his learner's permit. I'm nervous about teaching him. How should we structure the practice?
A: Start small and build up. Begin in an empty parking lot to practice starting, stopping, turning and reversing, then move to quiet residential streets, then busier roads, and only later highways, night driving and rain. Short, frequent sessions of 20 to 30 minutes work better than long ones. Agree on calm, simple instructions before you set off, such as turn left at the next light, and talk through what went well afterwards rather than during the drive.
U: I tend to grab the door handle and gasp. How do I stay calm?
A: Practicing the same route a few times helps both of you relax. Keep your comments specific and early so you are not reacting at the last second, and if you feel tense, ask him to pull over when it is safe and take a short break. Some parents also book a few lessons with a professional instructor at the start, so the basics come from someone else and the family practice can focus on building experience.

=== s-music-01 | music
U: I've been teaching myself guitar from videos and I can play G, C, D and E minor, but switching between them is slow and I lose the rhythm. How do I get faster?
A: Slow chord changes are the most common plateau for self-taught players, and the fix is focused practice on the transitions themselves. Try one-minute changes: pick two chords, set a timer for a minute and switch back and forth as many times as you can, counting the changes. Look for anchor fingers that can stay on the same string or slide along it. Practice with a metronome at a slow tempo and only strum on the first beat of each bar until the changes become smooth.
U: My fingertips hurt a lot too. Is that normal?
A: Yes, sore fingertips are normal for the first few weeks until calluses form. Short daily sessions of 15 to 20 minutes are better than one long session, and you can stop when it becomes genuinely painful. Having the strings checked at a guitar shop can help as well, since a high action makes every chord harder to press.

=== s-music-02 | music, food
U: I'm having people over for dinner next Friday and want some background music that isn't distracting. Can you suggest what to put on?
A: For dinner parties, instrumental or soft vocal music at low volume works best. Some directions that tend to suit:
- Cool jazz and bossa nova, which are relaxed and familiar without demanding attention
- Acoustic soul or mellow funk for a warmer, slightly livelier feel
- Modern instrumental or lo-fi playlists if your guests are younger
Aim for a playlist of about three hours so nothing repeats, and start quieter during the meal and a bit more upbeat afterwards.
U: Jazz sounds good. Any particular albums?
A: Classic albums that work well in the background include Miles Davis's Kind of Blue, Stan Getz and Joao Gilberto's Getz/Gilberto, Dave Brubeck's Time Out and Bill Evans's Waltz for Debby. They are well known, warm and not too busy. Streaming services also have ready-made dinner jazz playlists built around albums like these.

=== s-job-01 | job
U: I'm updating my resume for project manager roles. Can you help me make my bullet points stronger? One says: responsible for managing the website redesign project.
A: Strong bullet points focus on results rather than responsibilities. A useful structure is action verb, what you did, and the measurable outcome. For example: Led a six-person team to redesign the company website, delivering two weeks ahead of schedule and increasing online enquiries by 30 percent. If you do not have exact numbers, reasonable estimates or concrete details such as budget, team size or timeline still make the bullet far more convincing.
U: What verbs should I use besides led and managed?
A: Good alternatives include coordinated, delivered, launched, streamlined, negotiated, reduced, introduced, resolved and scaled. Choose the verb that reflects what you actually did, and vary them so that consecutive bullets do not all start the same way. Keep each bullet to one or two lines, and put your most impressive result first under each role.

=== s-job-02 | job
U: I got a job offer and I want to negotiate the salary, but I'm worried they'll withdraw it. How do I approach it?
A: It is very rare for an offer to be withdrawn because of a polite, well-reasoned negotiation, and most employers expect it. Start by thanking them and expressing enthusiasm for the role. Then give a specific number based on market data for the role and location, along with one or two reasons such as your experience or a competing offer. Keep the tone collaborative, and if they cannot move on base salary, ask about a signing bonus, extra leave, remote days or an earlier review.
U: Should I do it by email or on the phone?
A: Either can work. A phone or video call feels more personal and lets you gauge their reaction, while email gives you time to choose your words. A common approach is to ask for a short call, make your case there, and then follow up by email summarizing what was discussed. Whatever the channel, practice your key sentence out loud beforehand.
U: They came back with about half of what I asked for. Should I push again?
A: Meeting in the middle is a common outcome and often a good one. You can push once more if you have a strong reason, but it is usually better to accept the improved base and ask about something else, such as a signing bonus, an extra week of leave, a professional development budget or a six-month salary review in writing. Whatever you agree, make sure it appears in the final written offer before you resign from your current job.
U: And if my current employer makes a counteroffer?
A: Think about why you started looking in the first place. If the reasons were mostly about pay, a counteroffer might solve them, but if they were about growth, culture or management, more money rarely fixes that. Many people who accept counteroffers leave within a year or two anyway. Be polite and grateful either way, since you may cross paths with both companies again.

=== s-job-03 | job
U: I have an interview on Thursday and I always freeze at the question about my biggest weakness. What's a good way to answer it?
A: Interviewers ask this to see self-awareness and how you handle growth, so a genuine but manageable weakness works best. Pick something real that does not undermine the core of the job, explain a concrete step you have taken to improve, and show the result. For example, you might say you used to take on too much yourself instead of delegating, that you now plan work with your team at the start of each project, and that it has improved deadlines.
U: Is it OK to say I'm a perfectionist?
A: It is best avoided, because interviewers hear it so often that it sounds like a dodge. If attention to detail really does slow you down sometimes, describe it concretely, for example spending too long polishing slides, and explain how you now time-box tasks. Specific examples always sound more honest than a label.

=== s-home-01 | house
U: My bathroom faucet drips constantly. It's a single-handle one. Can I fix it myself?
A: Usually, yes. Single-handle faucets are typically either cartridge or ceramic disc types, and a drip often means a worn cartridge or worn seals. Turn off the water under the sink, plug the drain so no small parts disappear, remove the handle (there is often a screw under a decorative cap), and pull out the cartridge. Take it to a hardware store to find an exact match, or note the faucet brand so you can order the right part.
U: What tools will I need?
A: Typically an adjustable wrench, a Phillips and a flat screwdriver, an Allen key set, and possibly a cartridge puller for stubborn cartridges. Keep plumber's grease on hand for the new O-rings, and a towel to protect the sink from dropped tools. Take a photo at each step of disassembly so you know how everything goes back together.
U: Great, I'll give it a try on Saturday.
A: Good luck. When you reassemble it, turn the water back on slowly and check for leaks under the sink as well as at the spout. If the drip continues after a new cartridge, the valve seat may be damaged, and that is a good point to call a plumber.

=== s-home-02 | house
U: I want to paint our spare bedroom. It's about 3.5 by 4 meters with a 2.5 meter ceiling. How much paint do I need?
A: The four walls add up to a perimeter of 15 meters, so at 2.5 meters high that is about 37.5 square meters, minus roughly 2 square meters for a door and 1.5 for a window, giving around 34 square meters. Most paints cover about 10 to 12 square meters per liter per coat, and two coats are usually needed, so plan for about 6 to 7 liters. Buying a 5-liter tin plus a 2.5-liter tin is a practical combination.
U: Do I need primer?
A: Primer is recommended if you are covering a much darker color, painting fresh plaster or drywall, or covering stains. If the existing paint is in good condition and a similar color, a quality paint-and-primer or simply two coats of your paint is usually enough. Wash the walls with mild soapy water first and let them dry, because paint sticks poorly to greasy surfaces.
U: What finish should I pick for a bedroom?
A: For bedroom walls, a matte or eggshell finish is the most popular choice. Matte hides imperfections and looks soft and modern, but it is slightly harder to clean. Eggshell has a gentle sheen and wipes clean more easily, which is helpful if children or pets are around. Use a satin or semi-gloss finish for trim and doors, since they get touched more often.
U: Any tips for cutting in along the ceiling without tape?
A: Use a good-quality angled brush about 5 centimeters wide, load only the first third of the bristles, and start a few millimeters below the ceiling line, then gradually push the paint up to the edge in one smooth stroke. Keep a damp cloth handy to wipe mistakes immediately. Cut in one wall at a time and roll it while the edges are still wet, which avoids visible bands where brush and roller meet.

=== s-home-03 | house
U: I want to hang a heavy mirror, maybe 18 kilos, on a drywall wall. Are regular plastic anchors enough?
A: No, standard plastic anchors are not rated for that weight. The safest option is to screw directly into a wall stud, which you can locate with a stud finder. If the studs are not where you need them, use heavy-duty hollow-wall anchors such as toggle bolts or metal self-drilling anchors rated well above 18 kilograms. A French cleat, a pair of interlocking beveled strips, spreads the load and makes leveling the mirror much easier.
U: How do I make sure it's level?
A: Attach the wall half of the cleat using a spirit level, and the mirror will hang level automatically. If you use two hooks instead, measure the distance between the hanging points on the mirror, mark them on the wall with a level line, and double-check before drilling. Painter's tape on the wall makes marks easy to see and stops the drill bit from wandering.

=== s-home-04 | house
U: There's black mold in the grout around our shower and it keeps coming back. How do I get rid of it properly?
A: Surface mold on grout can usually be handled at home. Scrub with a paste of baking soda and water or a diluted bleach solution, about one part bleach to ten parts water, using an old toothbrush, with the room well ventilated and never mixing bleach with other cleaners. If the stains have gone deep into porous grout, it may be easiest to rake out the old grout and regrout, then seal it. Keep in mind that the real fix for recurring mold is moisture control.
U: What do you mean by moisture control?
A: Run the extractor fan during showers and for about 20 to 30 minutes afterwards, or open a window if there is no fan. Squeegee the tiles and leave the shower door or curtain open to dry. Wash or replace fabric shower curtains regularly. If the bathroom still stays damp, a more powerful fan or a small dehumidifier can make a big difference.
"""

FILLER_TEXT += r"""
=== s-pets-01 | pets
U: My cat has been throwing up hairballs about twice a week lately. She's an indoor long-haired cat. Should I be worried?
A: Occasional hairballs are common in long-haired cats, but twice a week is more than ideal and worth addressing. Brush her daily to remove loose fur before she swallows it, especially during shedding season. A hairball-control food or a vet-approved lubricant gel can help fur pass through. If she vomits more often, loses her appetite, seems lethargic, or strains without producing anything, see a vet promptly, since frequent vomiting can also signal other problems.
U: She hates being brushed. Any tips?
A: Start with very short sessions of a minute or two, at a time she is relaxed, and pair them with treats. A soft rubber grooming glove is often better tolerated than a metal brush. Focus on areas she enjoys, like the cheeks and back, and gradually work toward the belly and legs. Stopping before she gets annoyed helps her learn that brushing is not a battle.

=== s-pets-02 | pets, dog
U: My dog pulls like crazy on the leash and walks are exhausting. He's a year old and about 25 kilos. What can I do?
A: Leash pulling is very common in adolescent dogs. The most effective approach is to make pulling never work: when the leash goes tight, stop and wait, and only move forward when it slackens. Reward him often with small treats for walking next to you. A front-clip harness reduces pulling mechanically while you train. Short, focused training sessions in a boring environment, before trying busy streets, make progress faster.
U: Is a prong collar a good idea?
A: Most modern trainers and veterinary behavior groups recommend against aversive tools like prong collars, because they can cause discomfort and increase fear or reactivity. A front-clip harness or a head halter, introduced gradually, gives you control without pain. Pairing that with consistent reward-based training usually works well within a few weeks.

=== s-pets-03 | pets
U: I just set up a 60-liter aquarium. The shop said I need to cycle it before adding fish. What does that mean?
A: Cycling means growing colonies of beneficial bacteria that convert fish waste into less harmful compounds. Fish produce ammonia, bacteria turn it into nitrite, and a second group turns nitrite into nitrate, which you remove with regular water changes. In a new tank, those bacteria are missing, so ammonia and nitrite can build up and harm fish. A fishless cycle, where you add an ammonia source and test the water until both ammonia and nitrite read zero, usually takes four to six weeks.
U: Can I speed it up?
A: Yes, a few things help. Bottled bacteria starters can shorten the process, and adding a used filter sponge or gravel from an established, healthy tank seeds the bacteria quickly. Keeping the water around 25 to 28 degrees Celsius also speeds growth. Keep testing with a liquid test kit, and when you do add fish, start with just a few hardy ones.
U: Which fish are good for beginners in a tank this size?
A: A 60-liter tank suits a small community of peaceful, hardy fish. Good options include a school of six to eight small tetras such as ember or neon tetras, a group of corydoras catfish for the bottom, and perhaps a few platies or a single honey gourami. Avoid goldfish, which grow large and produce lots of waste, and check that the species you choose like similar water temperatures. Add fish gradually over several weeks so the bacteria can keep up.
U: How often do I need to change the water?
A: A weekly change of about 20 to 25 percent is a good routine for most community tanks. Use a gravel vacuum to remove debris from the substrate at the same time, treat the new water with a dechlorinator, and match its temperature to the tank. Rinse filter media only in removed tank water, never under the tap, so you do not kill the beneficial bacteria.

=== s-books-01 | books
U: It's my turn to host book club next week and we're reading a mystery novel. Can you give me some discussion questions that work for most mysteries?
A: Here are some questions that work for almost any mystery:
1. At what point did you first suspect the real culprit, and what made you suspicious?
2. Did the author play fair with the clues, or did the solution feel like a surprise out of nowhere?
3. Which red herring was most convincing, and why?
4. How did the setting shape the crime and the investigation?
5. Was the detective's personal life important to the story or a distraction?
6. If you could change the ending, would you?
These usually spark a lively discussion, especially when people disagree about the fairness of the clues.
U: Any ideas for food that fits a mystery theme?
A: You could lean into the setting of the book, for example English tea sandwiches and scones for a country-house mystery, or small plates from the region where it takes place. A fun touch is to label dishes with clue cards or character names. Keep it to finger food so people can eat while they talk.

=== s-books-02 | books, routine
U: I used to read a lot but now I barely finish a book a year. How can I get back into reading?
A: Many people go through this, and rebuilding the habit is mostly about making reading easy. Keep a book where you usually reach for your phone, such as the nightstand or your bag. Start with ten pages a day, which feels small enough to do even when tired. Give yourself permission to abandon books you do not enjoy, and pick something gripping rather than something you feel you ought to read. Audiobooks during chores or walks count too.
U: What kind of book would you suggest to restart?
A: Short, fast-paced books are ideal for rebuilding momentum. A well-reviewed thriller, a short novel under 250 pages, or a collection of essays or short stories you can finish in one sitting all work well. Once you finish two or three, the habit tends to come back on its own.

=== s-movies-01 | movies, kids
U: We do a family movie night every Friday and we're running out of ideas. The kids are 6 and 10. Any suggestions that both will enjoy?
A: It can be tricky to find films that work for both ages, but animated adventures and classic family films usually do. Some ideas: Paddington and Paddington 2, which are funny and gentle; My Neighbor Totoro, which is calm and magical; The Incredibles; Wallace and Gromit: The Curse of the Were-Rabbit; and Hugo for a slightly older feel. Letting each child pick a film on alternating weeks also cuts down on arguments.
U: Some way to make it more of an event?
A: Small rituals go a long way. Make themed snacks related to the film, build a blanket fort or lay out cushions on the floor, print simple tickets the kids can hand out, and turn off all phones. A short chat after the film about favorite moments is a nice way to end the evening.

=== s-movies-02 | movies
U: I just finished a long TV series and I have that post-series emptiness. How do I choose what to watch next without scrolling for an hour?
A: Decision fatigue is real with streaming. A few tricks help: keep a running watchlist whenever someone recommends something, so you choose from a short list instead of the whole catalog; set a five-minute limit for choosing; and try the first episode of two or three candidates before committing. Limited series of six to eight episodes are a good palate cleanser after a long show.
U: I liked that it had a big mystery running through it.
A: Then look for shows built around a central mystery with a satisfying ending, ideally ones that are complete so you know the answers come. Reading a spoiler-free review or checking whether critics praised the ending can save you from series that were cancelled on a cliffhanger.

=== s-lang-01 | language
U: I'm learning French and the subjunctive is killing me. When do I actually need it?
A: The French subjunctive mostly appears after expressions of wanting, feeling, doubt, necessity and certain conjunctions. Common triggers include il faut que, je veux que, je suis content que, bien que, pour que and avant que. For example, il faut que tu viennes means you have to come. A helpful rule is that it follows que when the second clause is subjective rather than a statement of fact, and that the subject of the two clauses is different.
U: Is there a trick to forming it?
A: For most verbs, take the third person plural present, ils parlent, drop the -ent, and add -e, -es, -e, -ions, -iez, -ent. So parler becomes que je parle, que nous parlions. Irregular verbs like etre, avoir, aller, faire, pouvoir and savoir need to be memorized, but they are also the most common, so you will meet them often enough to learn them.

=== s-lang-02 | language
U: I'm studying German and I keep mixing up the accusative and dative cases. Is there a simple way to think about them?
A: A useful shortcut: the accusative marks the direct object, the thing directly acted on, and the dative marks the indirect object, usually the person receiving something. In Ich gebe dem Mann den Ball, the ball is accusative and the man is dative. Some prepositions always take one case: durch, fur, gegen, ohne and um take accusative; aus, bei, mit, nach, seit, von and zu take dative.
U: What about the prepositions that can take both?
A: Those are the two-way prepositions: an, auf, hinter, in, neben, uber, unter, vor and zwischen. Use accusative for movement toward a destination, answering wohin, and dative for location, answering wo. So Ich gehe in den Park uses accusative because you are moving into it, while Ich bin im Park uses dative because you are already there.

=== s-health-01 | health
U: My allergies are terrible this spring, itchy eyes and constant sneezing. What can I do besides just suffering?
A: Several things help with seasonal allergies. Non-drowsy antihistamines such as cetirizine, loratadine or fexofenadine reduce sneezing and itching, and a steroid nasal spray used daily is very effective for congestion, though it takes a few days to reach full effect. Antihistamine eye drops help itchy eyes. Keep windows closed on high-pollen days, shower and change clothes after being outside, and check the local pollen forecast. If over-the-counter options are not enough, a doctor can discuss prescription treatments or allergy testing.
U: Is it OK to use the nasal spray every day for months?
A: Steroid nasal sprays are generally considered safe for daily use through the allergy season when used as directed, because very little is absorbed into the body. Aim the nozzle slightly outward, away from the middle of the nose, to reduce irritation and nosebleeds. This is different from decongestant sprays, which should not be used for more than a few days.

=== s-health-02 | health, routine
U: I've been having trouble falling asleep. I lie there for an hour most nights. I drink coffee in the afternoon, could that be it?
A: Afternoon coffee could definitely be contributing. Caffeine has a half-life of around five to six hours, so a cup at 3 pm can still have a noticeable effect at bedtime. Try cutting off caffeine by about noon for two weeks and see if it helps. Other common factors are irregular sleep times, screens and bright light late in the evening, and using the bed for work or scrolling.
U: What else should I try?
A: Keep a consistent wake-up time, even on weekends, because it anchors your body clock. Get daylight in the morning, dim the lights an hour before bed, and keep the bedroom cool and dark. If you are not asleep after about 20 minutes, get up and do something quiet until you feel sleepy. If insomnia continues for months, cognitive behavioral therapy for insomnia is the most effective long-term treatment and is often available online.
U: Is it bad to nap in the afternoon if I slept badly?
A: A short nap can help you get through the day, but it can also make it harder to fall asleep at night if you already struggle with that. If you nap, keep it to about 20 minutes and before about 3 pm. On days after a bad night, it is often better to stay up until your usual bedtime, since the extra sleep pressure helps you fall asleep faster.
U: What about a glass of wine to help me drift off?
A: Alcohol can make you feel drowsy and fall asleep faster, but it disrupts sleep later in the night, reducing deep and dream sleep and causing more awakenings. Regular use as a sleep aid tends to make insomnia worse over time. If you drink in the evening, keeping it to a small amount and finishing a few hours before bed reduces the effect.

=== s-health-03 | health
U: I bought a home blood pressure monitor and got 138 over 88. What does that mean?
A: That reading falls in a range many guidelines describe as elevated or stage 1 high blood pressure, depending on the guideline used. A single reading is not a diagnosis, though. Blood pressure varies through the day, and it is often higher when you are stressed or have just been active. Take readings at the same times each day for a week, sitting quietly for five minutes first, and share the average with your doctor.
U: How should I measure it correctly?
A: Sit with your back supported and feet flat, with your arm resting on a table at heart level. Use the right cuff size, placed on bare skin about two centimeters above the elbow. Avoid caffeine, exercise and smoking for 30 minutes before, stay quiet during the reading, and take two or three readings a minute apart, recording the average.

=== s-cars-01 | car
U: How do I know when my tires need replacing? The car passed inspection last year but I'm not sure about now.
A: The simplest check is tread depth. Many countries have a legal minimum around 1.6 millimeters, but braking in the wet gets noticeably worse below about 3 millimeters. Most tires have tread wear indicator bars in the grooves; when the tread is level with them, it is time to replace. Also look for cracks in the sidewall, bulges, and uneven wear, and replace tires older than about six to ten years regardless of tread, since the rubber hardens.
U: Should I replace all four at once?
A: Ideally you replace them in pairs on the same axle at least, so both sides grip evenly. On all-wheel-drive cars, many manufacturers recommend replacing all four together, because large differences in tread depth can strain the drivetrain. If you only replace two, the newer tires usually go on the rear axle for stability.

=== s-cars-02 | car
U: I'm trying to decide between a hybrid and a fully electric car for my next purchase. What are the main pros and cons?
A: A hybrid is the easier transition: you refuel at normal stations, there is no range anxiety, and fuel use is much lower than a regular car, especially in city driving. A fully electric car has lower running costs and maintenance, is quiet and quick, and produces no tailpipe emissions, but it works best if you can charge at home or at work. Check how far you drive on a typical day and on longer trips, and whether fast chargers are available on your regular routes.
U: How long do EV batteries last?
A: Modern EV batteries are generally designed to last the life of the car, and many manufacturers warrant them for around eight years or 160,000 kilometers. Most lose some capacity gradually, often on the order of 10 to 20 percent over many years. Avoiding frequent charging to 100 percent and limiting repeated fast charging helps preserve the battery.

=== s-moving-01 | moving, home-city
U: We're moving across town in six weeks. Can you help me make a moving checklist so I don't forget anything?
A: Here is a week-by-week outline:
- Six weeks out: book movers or a van, start decluttering, and gather boxes
- Four weeks out: notify your landlord or arrange a sale, and set up utilities and internet at the new place
- Three weeks out: update your address with your bank, employer, doctor and subscriptions, and arrange mail forwarding
- Two weeks out: pack rarely used rooms first and label boxes by room and contents
- Moving week: pack an essentials box with chargers, medicines, toiletries, tools and a change of clothes, and defrost the freezer
On moving day, take photos of meter readings at both homes.
U: Any tips for packing the kitchen?
A: Wrap plates vertically in paper, like records in a crate, since they are less likely to break standing up. Use small boxes for heavy items like cookware and books. Pack a separate kitchen box with a kettle, a few mugs, plates, cutlery and a pan so you can eat on the first night. Use up pantry items in the weeks before the move.
U: How do I move my houseplants without killing them?
A: Water them a couple of days before the move, not on the day, so the pots are lighter and less messy. Pack them in open boxes with newspaper around the pots so they do not tip, and move them in your own car rather than in a hot or cold moving truck. Prune any long trailing stems to prevent breakage. At the new place, put them in similar light to what they had before and expect a little leaf drop while they adjust.
U: And how do I keep the kids calm through all this?
A: Involve them early: show them photos of the new place, let them choose something for their new room, and give them a box to pack their own special things. Keep routines such as meals and bedtime as normal as possible around moving day. Setting up their bedrooms first at the new home gives them a familiar space quickly, which helps a lot.

=== s-moving-02 | moving
U: I'm about to rent my first apartment on my own. What should I check before signing the lease?
A: Read the whole lease carefully, especially the length, the rent increase terms, the deposit and what it covers, and the rules for ending the lease early. During the viewing, test the taps, water pressure, heating, windows and outlets, and look for signs of damp, mold or pests. Ask what utilities are included and roughly how much they cost. Before moving in, document the condition of every room with dated photos so you get your deposit back.
U: Should I get renters insurance?
A: Yes, it is usually inexpensive and covers your belongings against theft, fire and water damage, plus personal liability if, for example, a leak from your place damages a neighbor's. Your landlord's policy covers the building, not your possessions. Compare a few quotes and check whether the policy pays replacement cost or actual cash value.

=== s-wedding-01 | wedding
U: My best friend asked me to be the best man and I have to give a speech. I'm terrible at public speaking. How do I write a good one?
A: Congratulations. A good best man speech is short, warm and personal, about three to five minutes. A simple structure: introduce yourself and how you know the groom, share one or two stories that show who he is, say something sincere about the couple together, and finish with a toast. Keep jokes kind, avoid stories about exes or anything that would embarrass the family, and make sure everyone in the room can follow the references.
U: How do I deal with nerves?
A: Practice out loud several times, ideally in front of a friend, until you know the flow rather than every word. Keep short notes on cards in case your mind goes blank. Eat something beforehand, have water nearby, and go easy on drinks before the speech. Speaking slowly and pausing after jokes will make you seem far more confident than you feel.
U: How do I end the speech well?
A: End by turning from stories to the couple, with a sincere sentence about what makes them good together or a wish for their future. Then invite everyone to stand and raise their glasses, and give a clear toast, such as to the happy couple, with their names. Pause, smile, and make eye contact with the couple as you raise your glass. A short, heartfelt ending is always better than one more joke.

=== s-wedding-02 | wedding, budget
U: I've been invited to a coworker's wedding and I don't know her that well. How much should I spend on a gift?
A: For a coworker you are friendly with but not close to, choosing something from the registry within a moderate budget is perfectly appropriate. The amount depends a lot on local customs and your own budget, and it is fine to spend less if money is tight. Many people also go in on a group gift with other colleagues, which lets you give something nicer together. A warm card with a personal note is always appreciated.
U: Do I have to bring a gift if I don't attend?
A: It is not strictly required, but sending a small gift or a card with your best wishes is a kind gesture if you decline an invitation. You can send it from the registry directly to the couple. RSVP promptly either way so they can plan numbers.

=== s-misc-01 | food
U: I just bought a pour-over cone and a gooseneck kettle. What ratio of coffee to water should I start with?
A: A good starting point is 1:16, for example 20 grams of coffee to 320 grams of water. Use water just off the boil, around 92 to 96 degrees Celsius, and a medium-fine grind. Start with a bloom of about twice the coffee's weight in water for 30 to 45 seconds, then pour slowly in circles, aiming for a total brew time of around three minutes. Adjust one variable at a time: a finer grind for more strength and sweetness, coarser if it tastes bitter.
U: Does the water matter?
A: Quite a lot, since coffee is almost all water. Very hard water can make coffee taste flat and chalky, while distilled water makes it taste sour and thin. Filtered tap water is a good choice in most places. If your kettle builds up lots of scale, your water is probably hard and a simple jug filter will improve the taste.

=== s-misc-02 | photo
U: My phone photos at night always come out blurry or grainy. Any tips?
A: Phone cameras struggle in low light because the sensor is small, so the camera lengthens the exposure or raises sensitivity. To get sharper shots, hold the phone with both hands and elbows tucked in, or rest it on something stable. Use night mode if your phone has it, and stay still until it finishes. Tap to focus on your subject, and lower the exposure slightly so highlights do not blow out. Avoid digital zoom, which magnifies noise.
U: What about photos of people in a dim restaurant?
A: Ask your subjects to sit facing the strongest light source, such as a window or a lamp, and get close rather than zooming. Portrait or night mode often helps with faces. A friend's phone flashlight bounced off a white menu or napkin makes a surprisingly good soft fill light, far more flattering than the built-in flash.

=== s-misc-03 | games
U: Can you recommend some board games for four adults who are not hardcore gamers? Something we can learn in 15 minutes.
A: Here are some widely loved options that are easy to learn:
- Ticket to Ride: collect train cards and claim routes; simple rules, satisfying strategy
- Codenames: a word-guessing game in two teams, great for laughs
- Azul: draft colorful tiles to decorate a wall; quick and beautiful
- Splendor: collect gems to buy cards; light but engaging
- Carcassonne: lay tiles to build a medieval landscape and claim areas
All of these play in under an hour and are easy to explain.
U: Which would be best if people like to talk and joke a lot?
A: Codenames is the best fit for chatty groups, since the whole game is about giving clues and debating guesses. Party games like Wavelength or Just One are also very social and quick to explain. Save Azul and Splendor for evenings when people want something a bit quieter.
U: Any good ones for just two players? My partner and I play on weeknights.
A: There are excellent games designed for two. Patchwork is a cozy puzzle game about sewing a quilt, Jaipur is a quick trading card game, and 7 Wonders Duel is a deeper favorite that plays in about 30 minutes. Lost Cities is a light card game that works well with a glass of wine. Codenames Duet adapts the word game into a cooperative version for two.

=== s-misc-04 | job
U: Can you help me write a polite email declining a recurring meeting? It's a weekly status call that I don't really need to be in anymore.
A: Sure. Here is a short, friendly draft: Hi Sam, thanks for including me in the weekly status call. Now that my part of the project has wrapped up, I do not think I need to attend regularly, so I will step back from the meeting to focus on my current work. Please feel free to loop me in whenever a topic needs my input, and I am happy to review the notes. Thanks for understanding! Adjust the reason to your situation; a brief explanation and an offer to stay available keep it positive.
U: Should I tell my manager first?
A: If your manager set up or cares about your attendance, a quick heads-up is a good idea so it does not come as a surprise. A one-line message saying you plan to drop the meeting and why is usually enough. It also gives them a chance to object if there is a reason you should stay.

=== s-misc-05 | kids
U: My kid asked me why the sky is blue and I realized I can't explain it. Can you give me a simple explanation for an eight-year-old?
A: Here is a kid-friendly version: sunlight looks white, but it is actually made of all the colors of the rainbow mixed together. When sunlight comes into our air, it bumps into tiny bits of air that are much too small to see. Blue light gets bounced around in all directions much more than red or yellow light, so when you look at the sky, blue light is coming at you from everywhere, and the sky looks blue.
U: And why are sunsets orange then?
A: At sunset, the sunlight has to travel through much more air to reach us, because the sun is low in the sky. Along the way most of the blue light gets bounced away to the side, so the colors that make it all the way to our eyes are the reds, oranges and yellows. You could tell her that the blue light gets lost on the long trip, leaving the warm colors for us.

=== s-misc-06 | fitness, bike
U: My bike chain is squeaky and looks dirty. How often should I clean and lube it?
A: A squeaky chain usually means it is dry. A good rule is to lube it every 150 to 300 kilometers, or after any ride in the rain. Wipe the chain with a rag first, and every month or so give it a proper clean with a degreaser and a brush. Apply one drop of lube to each roller while turning the pedals backwards, let it soak in for a few minutes, and then wipe off the excess, since extra lube attracts dirt.
U: Wet lube or dry lube?
A: Dry lube suits dry, dusty conditions; it stays cleaner but wears off faster, especially in rain. Wet lube lasts longer and resists water, which is better for wet climates or winter, but it collects more grime. Many commuters use wet lube through the rainy months and switch to dry lube in summer.

=== s-misc-07 | crafts
U: I want to knit my first scarf. I've never knitted anything. What yarn and needles should I buy?
A: For a first project, choose a smooth, light-colored worsted or chunky weight yarn, so you can see your stitches clearly. Wool or a wool blend is forgiving and springy. Match it with needles of the size recommended on the yarn label, often 5 to 6 millimeters for worsted. Bamboo or wooden needles are less slippery than metal, which helps beginners keep stitches from sliding off.
U: What stitch should I use?
A: Garter stitch, which is simply knitting every row, is the classic first scarf. It lies flat, looks the same on both sides, and only requires one stitch. Cast on about 25 to 30 stitches for a medium-width scarf, and knit until it reaches the length you want, typically around 150 centimeters. Once you are comfortable, you can try a simple rib pattern of knit two, purl two.
"""

FILLERS: list[Filler] = parse_fillers(FILLER_TEXT)

# ---------------------------------------------------------------------------
# Questions and their evidence sessions.
# ---------------------------------------------------------------------------

SPECS: list[Spec] = [
    # -- single-session-user ------------------------------------------------
    Spec(
        qid="lme-001", qtype="single-session-user",
        question="What breed is the puppy we brought home this spring?",
        answer="A Shetland sheepdog (sheltie), named Pepper.",
        asked="2023/07/03 09:30", start="2023/02/01", avoid=frozenset({"pets", "dog"}),
        evidence=[Evidence("2023/04/16 20:12", "pets", """
U!: I need some help with crate training. We brought home a ten-week-old Shetland sheepdog last Sunday, her name is Pepper, and she cries in her crate for what feels like hours every night. My husband wants to give up and let her sleep in our bed but I'd rather not start that habit. What should we do?
A: Crying in the crate during the first couple of weeks is very normal, so you are not doing anything wrong. A few things usually help:
- Put the crate in your bedroom for now, so she can hear and smell you and does not feel abandoned
- Make it cozy with a blanket and a chew toy, and feed her meals in the crate so it becomes a good place
- Take her out to toilet right before bed and once during the night, calmly and without play
- Practice short daytime crate sessions while you are home, so the crate is not only about being left alone
Most puppies settle within one to three weeks if the routine is consistent.
U: She also nips at our ankles constantly when we walk around the kitchen. Is that normal?
A: Yes, ankle nipping is extremely common in puppies, and herding breeds in particular have a strong instinct to chase and nip moving feet. Redirect her to a tug toy whenever she starts, and stand still for a moment if she keeps going, because moving feet are more exciting. Make sure she gets enough sleep, since overtired puppies nip much more; at this age many need 18 hours of sleep a day. Short training games that give her something to do with her brain also help a lot.
U: OK that makes sense. How many meals a day should she be getting at this age?
A: At around ten weeks, most puppies do well on three to four small meals a day, spaced evenly, moving to three meals at about three months and two meals from around six months. Follow the feeding guide on her puppy food as a starting point and adjust so she stays lean, with a visible waist and ribs you can feel easily. Your vet can confirm the right amount at her next vaccination visit.
U: When can we start taking her on proper walks outside?
A: Most vets advise waiting until about one to two weeks after the final puppy vaccination before walking in public places where unknown dogs go, which is often around 14 to 16 weeks of age. Until then, you can carry her around the neighborhood to see traffic, people and other sights, and let her explore your own garden. This early socialization window is very important, so aim for lots of calm, positive new experiences. Once walks start, keep them short, roughly five minutes per month of age, once or twice a day.
""")],
    ),
    Spec(
        qid="lme-002", qtype="single-session-user",
        question="Where did I do my postgraduate degree?",
        answer="At the University of Leeds (a master's in environmental engineering).",
        asked="2023/05/28 18:05", start="2022/12/10",
        evidence=[Evidence("2023/03/07 21:47", "job", """
U: Can you help me write a cover letter? I'm applying for a senior role at a regional water utility, working on their flood-risk planning team.
A: Of course. A strong cover letter for a role like that usually has three parts: an opening that names the role and shows genuine interest in the organization, one or two paragraphs that connect your most relevant experience to what the team needs, and a short closing that expresses enthusiasm and invites a conversation. If you share the job description and a little about your background, I can draft something tailored to it.
U!: Sure. Background: I've spent five years at an engineering consultancy doing drainage and stormwater modeling, mostly for local councils. Before that I did my master's in environmental engineering at the University of Leeds, and my dissertation was on urban flood modeling. The job ad emphasizes stakeholder communication and hydraulic modeling.
A: That is a great fit for the role. Here is a draft you can adapt: Dear Hiring Manager, I am writing to apply for the Senior Flood-Risk Planner position. Over the past five years at my consultancy, I have built and calibrated drainage and stormwater models for local councils, and I have presented the results to everyone from engineers to elected members and residents. My academic background in urban flood modeling gave me a strong technical foundation, and my consulting work taught me to turn complex model outputs into clear decisions. I would welcome the chance to bring that combination of hydraulic modeling and stakeholder communication to your team.
U: That's good. Should I mention specific software?
A: Yes, briefly. Hiring managers for modeling roles often scan for the tools they use, so naming the hydraulic modeling packages and GIS software you know well is worthwhile. Put them in the context of a result, for example that you built an integrated catchment model used to prioritize investment, rather than as a bare list. Keep the full list of tools for your CV.
""")],
    ),
    Spec(
        qid="lme-003", qtype="single-session-user",
        question="How long does it take me to get to the office?",
        answer="About 50 minutes each way, by train.",
        asked="2023/10/02 07:55", start="2023/04/20", avoid=frozenset({"commute"}),
        evidence=[Evidence("2023/08/14 08:20", "coding", """
U: I want to learn some programming in my spare time but I don't have much free time at home with two kids. Is it realistic to learn on my phone?
A: It is realistic for certain parts of learning to program. Phone apps and interactive courses are good for learning syntax, core concepts and practicing small exercises, and reading documentation or short tutorials works well on a small screen. Building real projects is much easier on a laptop, so a mix works best: concepts and practice on the phone, and a weekly longer session on a computer to build something.
U!: That's what I was thinking. I'm on the train about fifty minutes each way to and from the office, so that's almost two hours a day I could use. Which language should I start with?
A: Python is a great first language for that situation. Its syntax is readable, there are many mobile-friendly courses and practice apps for it, and it is useful for automating spreadsheets and everyday tasks, which gives you quick wins at work. A good plan could be:
1. Weeks 1 to 4: variables, conditions, loops and functions, with short daily exercises
2. Weeks 5 to 8: lists, dictionaries, files and simple scripts
3. Weeks 9 onward: one small project per month on your laptop, such as automating a report
Offline-capable apps are worth it if the train has patchy signal.
U: Patchy signal is definitely a thing on my line. Any apps that work offline?
A: Several learning apps let you download lessons in advance; check the settings for an offline or download option before you buy a subscription. You can also install a Python environment app on your phone to run small scripts without a connection, and save documentation pages or an e-book on Python basics for reading. Downloading the next week's lessons on Sunday evening is a simple habit that avoids the problem.
U: Should I do a course with certificates or just free tutorials?
A: For learning the basics, free tutorials and documentation are more than enough, and many excellent free courses exist. Certificates mainly matter if you want to show structured learning to an employer, and even then a small portfolio of working projects usually impresses more. A good compromise is to start with free material, and only pay for a course once you know you enjoy it and want a more guided path. Whatever you choose, write code every day, even if only a few lines.
""")],
    ),
    Spec(
        qid="lme-004", qtype="single-session-user",
        question="What instrument did I take up about a year ago?",
        answer="The cello.",
        asked="2023/09/18 20:40", start="2023/03/01", avoid=frozenset({"music"}),
        evidence=[Evidence("2023/06/06 19:25", "health", """
U!: My lower back has been aching after I practice. I've been playing the cello for about a year now, usually 40 minutes to an hour in the evenings, sitting on a kitchen chair. Any idea what I could change?
A: Back pain after playing is often about the chair and your posture rather than the instrument itself. A few things to check:
- Sit on the front half of a firm, flat chair without arms, with your hips slightly higher than your knees
- Keep both feet flat on the floor and your weight balanced over your sitting bones rather than slumping back
- Adjust the endpin so the instrument comes to you rather than you leaning toward it
- Take a short break every 20 minutes to stand up and move
A kitchen chair with a backward-sloping seat can tilt your pelvis and round your lower back, so a simple wedge cushion can make a big difference.
U: Are there stretches I could do before or after?
A: Yes, a short routine helps. Before playing, do gentle cat-cow movements, shoulder rolls and a few hip circles to warm up. Afterwards, try a knees-to-chest stretch lying on your back, a gentle seated twist to each side, and a child's pose for about a minute. If the pain is sharp, spreads down your leg, or does not improve after a couple of weeks of changes, it is worth seeing a physiotherapist.
U: Thanks. I'll get a wedge cushion and see.
A: That is a good first step. You might also ask your teacher to watch your posture for a few minutes at your next lesson, since small adjustments to how you hold the bow arm and shoulders can also reduce strain on your back.
""")],
    ),
    Spec(
        qid="lme-005", qtype="single-session-user",
        question="Who is my manager at work?",
        answer="Renata.",
        asked="2023/11/20 12:15", start="2023/05/10", avoid=frozenset({"job"}),
        evidence=[Evidence("2023/08/29 13:05", "job", """
U: I want to take a week off in October to visit my parents. Can you help me write a request that doesn't sound awkward?
A: Sure. A time-off request works best when it is short, specific and shows you have thought about coverage. Include the exact dates, mention that you have checked the team calendar, and explain how your work will be handled while you are away. You do not need to justify why you want the time off, though a brief reason can make it feel friendlier.
U!: My boss Renata is pretty strict about asking at least six weeks ahead and she always wants to know who's covering the client calls. The dates would be October 16 to 20.
A: Here is a draft for her: Hi Renata, I would like to request annual leave from Monday, October 16 to Friday, October 20. I am asking well ahead so there is plenty of time to plan. I have checked the team calendar and there are no major deadlines that week. Jordan has agreed to cover my client calls, and I will brief them and share notes the week before. Please let me know if this works or if you would like me to adjust anything. Thanks! Replace Jordan with whoever will actually cover for you, and make sure you have asked them first.
U: Should I send it by email or mention it in our one-on-one first?
A: Mentioning it briefly in your one-on-one and then following up in writing is a good approach, especially if she likes advance notice. It gives her a chance to raise any concerns in person, and the email or leave system entry provides a clear record of the dates. If your company uses an HR system for leave, submit it there as well so the request is formally logged.
""")],
    ),
    Spec(
        qid="lme-006_abs", qtype="single-session-user",
        question="What color is my car?",
        answer="You did not mention your car's color. You mentioned driving a 2016 Mazda3 with about 140,000 km on it, but not what color it is.",
        asked="2023/08/09 17:30", start="2023/02/15", avoid=frozenset({"car"}),
        evidence=[Evidence("2023/05/21 11:10", "car", """
U!: The check engine light came on in my 2016 Mazda3 this morning. It has about 140,000 km on it. The car drives normally. Do I need to stop driving it?
A: If the light is steady rather than flashing and the car drives normally, it is usually safe to drive for a short time, but you should have it checked soon. A flashing check engine light means a serious misfire that can damage the catalytic converter, and in that case you should stop driving. Common causes of a steady light include a loose fuel cap, a failing oxygen sensor, a worn spark plug or ignition coil, or an evaporative emissions leak.
U: How do I find out what the code is?
A: Many auto parts stores will read the code for free with an OBD-II scanner, or you can buy an inexpensive Bluetooth OBD-II reader that works with a phone app. The code, such as P0420 or P0301, points to the system involved. Write it down before anything is cleared, because it helps a mechanic diagnose the problem faster.
U: I did fill up yesterday, so maybe the fuel cap?
A: That is a very common cause. Check that the cap is tightened until it clicks and that the seal is not cracked. The light will not turn off immediately even if that was the problem; it usually takes a few days of normal driving for the system to recheck and clear it. If the light is still on after a week, get the code read.
""")],
    ),
    # -- single-session-assistant -------------------------------------------
    Spec(
        qid="lme-007", qtype="single-session-assistant",
        question="When I said I'd never baked a loaf before, you listed a few options to start with. Which one was second on your list?",
        answer="Irish soda bread.",
        asked="2023/04/11 10:00", start="2022/11/01",
        evidence=[Evidence("2023/01/22 15:30", "cooking", """
U: I've never made bread in my life but my sister gave me a cast iron Dutch oven for Christmas. What are some easy ones to start with?
A!: A Dutch oven is perfect for beginner bread, because it traps steam and gives a crackly crust with almost no effort. Here are four good starting points, roughly in order of how hands-off they are:
1. No-knead Dutch oven bread: mix flour, water, salt and a pinch of yeast, leave it overnight, and bake it in the preheated pot
2. Irish soda bread: no yeast at all, just flour, baking soda, salt and buttermilk, ready in under an hour
3. Focaccia: a wet dough stretched in a pan with olive oil, very forgiving and great for learning how dough behaves
4. A simple sandwich loaf in a tin, once you want to practice kneading and shaping
Start with the first one, since it teaches you how a good loaf should look and feel with very little technique.
U: I don't have buttermilk. Can I still make the soda bread?
A: Yes. Stir one tablespoon of lemon juice or white vinegar into a cup of milk and let it sit for five to ten minutes until it thickens slightly; that works as a buttermilk substitute. Plain yogurt thinned with a little milk also works well. The acid is what reacts with the baking soda, so do not skip it.
U: And for the no-knead one, how hot should the oven be?
A: Preheat the oven with the Dutch oven inside to about 230 to 250 degrees Celsius for at least 30 minutes. Bake the loaf with the lid on for 30 minutes, then remove the lid and bake for another 15 to 20 minutes until the crust is deep brown. Let it cool for at least an hour before slicing, because the inside is still setting.
""")],
    ),
    Spec(
        qid="lme-008", qtype="single-session-assistant",
        question="For my Portugal trip, where did you suggest going on a day out from the capital to see palaces?",
        answer="Sintra, for the Pena Palace and the Quinta da Regaleira.",
        asked="2023/06/30 22:10", start="2023/01/05",
        evidence=[Evidence("2023/03/26 16:45", "travel", """
U: I'm going to Lisbon for five days in May with my partner. We like food, views and walking, not so much museums. Could you sketch an itinerary?
A!: Here is a relaxed five-day plan built around food, viewpoints and walking:
1. Day 1: Alfama and the castle, with sunset at the Miradouro da Senhora do Monte
2. Day 2: Baixa and Chiado, a ride on tram 28, and dinner in Bairro Alto
3. Day 3: Belem for the riverside walk, the monument to the discoveries and the famous custard tarts
4. Day 4: a day trip to Sintra by train to see the Pena Palace and the gardens and tunnels of the Quinta da Regaleira, with a stop in Cascais on the way back if you have energy
5. Day 5: LX Factory, the Time Out market and a last evening in Principe Real
Book the Sintra palace tickets online in advance, because the queues in May can be long.
U: That looks great. Is the food market worth it or too touristy?
A: It is busy and aimed at visitors, but it is a convenient way to taste dishes from several well-known local chefs in one place, so many people enjoy it for lunch. Go at an off-peak time, such as late morning on a weekday. For a more local experience, try a small family-run tasca for grilled sardines or bitoque, and ask for the dish of the day.
U: How do we get around? Are taxis expensive?
A: Lisbon's center is walkable, but very hilly, so comfortable shoes matter. Trams, buses and the metro are cheap with a rechargeable transport card, and ride-hailing apps are widely used and generally inexpensive compared with other Western European capitals. Trains to Sintra and Cascais leave from central stations and take about 40 minutes.
""")],
    ),
    Spec(
        qid="lme-009", qtype="single-session-assistant",
        question="Which Python package did you point me to for my export whose timestamps came in several inconsistent formats?",
        answer="python-dateutil (its parser.parse function).",
        asked="2023/12/04 14:20", start="2023/06/01",
        evidence=[Evidence("2023/09/13 10:35", "coding", """
U: I've got a CSV export from our old ticketing system and the created_at column is a mess. Some rows are like 2023-04-05 14:22, others 05/04/2023 2:22 PM, and some are Apr 5 2023. I need them all as proper datetimes in Python.
A!: The easiest approach for mixed formats is the python-dateutil package, whose parser.parse function can read most human-written date strings without you specifying a format. Install it with pip install python-dateutil, then use from dateutil import parser and parser.parse(value, dayfirst=True) for each value. The dayfirst flag matters for ambiguous strings like 05/04/2023: set it to True if those mean 5 April, and False if they mean May 4. Wrap the call in a try/except so you can log any values it cannot read.
U: They're European dates, so day first. Will this be slow on 200k rows?
A: Parsing row by row with a flexible parser is noticeably slower than parsing a known format, but 200,000 rows should still take well under a minute on a normal laptop. If speed matters, first try pandas.to_datetime with format set to mixed and dayfirst set to True, which handles the whole column at once, and fall back to the row-by-row approach only for values pandas could not parse. Caching results helps too, because exports often repeat the same timestamp strings.
U: Perfect. And then I want to store them in UTC.
A: Decide which time zone the original values were recorded in, attach it with tz_localize, for example Europe/Berlin, and then convert with tz_convert to UTC. Be careful around daylight saving changes, where some local times are ambiguous or do not exist; the ambiguous and nonexistent options of tz_localize let you choose how to handle them.
""")],
    ),
    Spec(
        qid="lme-010", qtype="single-session-assistant",
        question="In the budgeting rule of thumb you walked me through, what share of our take-home pay did you say should go to savings and paying down debt?",
        answer="20 percent (about $1,240 a month of their $6,200 take-home pay).",
        asked="2023/07/25 21:00", start="2023/01/15", avoid=frozenset({"budget"}),
        evidence=[Evidence("2023/04/03 20:30", "finance", """
U: My partner and I just merged our finances after getting married. Our combined take-home is about $6,200 a month. We've never really budgeted. Where do we start?
A!: A simple starting framework is the 50/30/20 rule. It splits your take-home pay into three buckets:
- 50 percent for needs, such as rent or mortgage, utilities, groceries, insurance and minimum loan payments, which for you is about $3,100
- 30 percent for wants, such as eating out, hobbies, streaming and travel, about $1,860
- 20 percent for savings and extra debt repayment, about $1,240
It is not a strict law, just a way to see quickly whether your spending is out of balance. Track your actual spending for a month or two, then compare it with these targets.
U: Our rent alone is $2,300, so needs will definitely be more than half.
A: That is very common in high-cost areas. If needs take 60 percent, you can shrink wants to 20 percent and keep savings at 20, or accept a lower savings rate for now and raise it when your income grows. The key is to decide the split deliberately, rather than saving whatever happens to be left at the end of the month. Automating a transfer to savings on payday makes that much easier.
U: Should we have one joint account or keep separate ones too?
A: Many couples use a hybrid: a joint account for shared bills and goals, funded by each partner proportionally or equally, plus individual accounts for personal spending that does not need discussion. It reduces friction over small purchases while keeping shared finances transparent. Whatever you choose, a short monthly money check-in helps keep you both on the same page.
""")],
    ),
    Spec(
        qid="lme-011", qtype="single-session-assistant",
        question="When I asked for more thoughtful science fiction, which book by the author of the Earthsea series did you recommend?",
        answer="The Left Hand of Darkness (by Ursula K. Le Guin).",
        asked="2023/05/15 08:45", start="2022/12/01", avoid=frozenset({"books"}),
        evidence=[Evidence("2023/02/19 22:05", "books", """
U: I have a 14-hour flight next month and want a couple of novels. I loved The Martian but I'd like something a bit more thoughtful and philosophical this time, still science fiction.
A!: Here are three that fit well:
1. The Left Hand of Darkness by Ursula K. Le Guin, about an envoy on a frozen planet whose inhabitants have no fixed gender; it is a quiet, profound book about trust, politics and identity
2. Station Eleven by Emily St. John Mandel, which follows a traveling theater troupe after a pandemic and asks what makes life worth living
3. Children of Time by Adrian Tchaikovsky, about evolving spiders and the last humans, with big ideas about intelligence and empathy
The first is the most literary, the third the most page-turning.
U: I'll probably get the spider one for the flight, it sounds fun. Is it part of a series?
A: Yes, Children of Time is the first book in a trilogy, followed by Children of Ruin and Children of Memory. The first book stands on its own, with a complete story, so you can stop there if you like it but want something different next. The sequels explore other species with the same mix of science and big ideas.
U: Great, thanks!
A: Enjoy your flight. If you want something lighter to switch to when you get tired, a collection of short stories on your phone or e-reader is handy, since you can finish one in a short burst between meals and naps.
""")],
    ),
    Spec(
        qid="lme-012", qtype="single-session-assistant",
        question="Which plant did you say I could grow as a decoy to draw the aphids off my tomatoes?",
        answer="Nasturtiums.",
        asked="2023/08/21 19:00", start="2023/02/20", avoid=frozenset({"garden"}),
        evidence=[Evidence("2023/05/27 09:15", "garden", """
U: This is my first year growing tomatoes. I have six plants in big pots on the patio and I've spotted little green bugs under the leaves. I think they're aphids. What should I do? I don't want to spray chemicals.
A: Those are very likely aphids, and you can usually control them without chemicals. Knock them off with a strong spray of water every couple of days, focusing on the undersides of leaves, or wipe them off by hand. If that is not enough, an insecticidal soap or a mild solution of a few drops of dish soap in water can be sprayed directly on them in the evening. Ladybirds and lacewings are natural predators, so avoid anything that would harm them.
U: Is there anything I can plant nearby to help?
A!: Yes, companion planting can help. Basil planted alongside tomatoes is said to deter some pests and is handy in the kitchen. French marigolds are often used around vegetable beds against whiteflies. Nasturtiums are a classic sacrificial crop: aphids tend to prefer them, so a few pots placed a little distance away draw the aphids off your tomatoes, and you can remove the infested leaves. Flowers such as alyssum or dill also attract hoverflies and ladybirds, whose larvae eat aphids.
U: Love it. When should I start feeding the tomatoes?
A: Start feeding once the first flowers appear, with a high-potassium tomato feed every week or as the label suggests. Before that, too much nitrogen encourages leaves rather than fruit. In pots, consistent watering matters just as much, since irregular watering causes split fruit and blossom end rot.
""")],
    ),
    # -- single-session-preference ------------------------------------------
    Spec(
        qid="lme-013", qtype="single-session-preference",
        question="Can you suggest a few dinners I could make this week?",
        answer="The user would prefer quick vegetarian dinners (they stopped eating meat last spring) that take about 30 minutes on weeknights and contain no mushrooms, which they cannot stand.",
        asked="2023/10/09 17:45", start="2023/03/15", avoid=frozenset({"food"}),
        evidence=[Evidence("2023/06/18 13:40", "cooking", """
U: I'm thinking about buying an air fryer. Are they actually useful or just another gadget that ends up in a cupboard?
A: It depends on how you cook. Air fryers are essentially small, powerful convection ovens, so they are great at crisping things quickly: roasted vegetables, potatoes, tofu, reheated leftovers and frozen foods come out much better than in a microwave. They heat up almost instantly, which makes them handy for small portions. If you already have a good oven and mostly cook large batches, you may use it less.
U!: Mostly I'd use it for weeknight dinners. I went vegetarian last spring, so it'd be a lot of veggies and tofu, and I really only have about half an hour after work. Oh and I can't stand mushrooms, the texture makes me gag, so I always skip recipes with them.
A: In that case an air fryer could be very useful. Crispy tofu cubes tossed in cornstarch and soy sauce take about 15 minutes, and cauliflower, broccoli, chickpeas, halloumi and sweet potato wedges all roast beautifully in 12 to 20 minutes. You can cook the protein in the air fryer while you make a quick grain or salad on the stove. A basket-style model of around 4 to 6 liters is a good size for one or two people.
U: Are there any downsides?
A: The main downsides are capacity and counter space. The basket fits only a few portions, so cooking for a family often means batches, and the unit takes up as much room as a coffee machine. Some models are also fairly loud. Choose one with a removable, dishwasher-safe basket, because cleaning is the part people complain about most.
U: Do I need to preheat it like an oven?
A: Many air fryers heat so quickly that preheating is optional, but a three-minute preheat gives crispier results for things like tofu, fries and vegetables, because the food starts browning immediately. Check your model's manual, since some have a preheat setting. Shake the basket or flip the food halfway through cooking, and avoid overcrowding, which is the most common reason for soggy results.
""")],
    ),
    Spec(
        qid="lme-014", qtype="single-session-preference",
        question="Can you recommend something to listen to while I'm out on my long runs?",
        answer="The user would prefer long-form, narrative history podcasts or audiobooks (they enjoyed a long series on the fall of the Roman Republic and like ancient and medieval history), and would not want chatty comedy or banter-heavy shows, which annoy them.",
        asked="2023/09/10 06:30", start="2023/02/01", avoid=frozenset({"running"}),
        evidence=[Evidence("2023/05/09 19:50", "fitness", """
U: My wired earbuds keep falling out when I run. Are there wireless ones that actually stay in?
A: Yes. For running, look for earbuds with ear hooks or wing tips that lock into the ridge of your ear, since those are much more stable than plain in-ear buds. Also check the water and sweat resistance rating, ideally IPX4 or higher, and battery life of at least five to six hours if you do long runs. Trying the different tip sizes that come in the box makes a big difference to fit.
U!: Battery life matters, my long runs are about two hours now. I mostly listen to long history series while I run. I just finished a twenty-episode one about the fall of the Roman Republic and loved it, I'm into anything ancient or medieval. What I can't stand is those shows where the hosts just banter and laugh at their own jokes for half an hour.
A: With two-hour runs, aim for earbuds with at least six hours per charge so you are never caught out, and a case that gives a few extra charges. Spoken-word audio also uses less power than loud music, which helps. For safety on roads, consider a model with a transparency or ambient mode, so you can hear traffic while still following the narration.
U: Good point about traffic. Does noise cancelling matter?
A: For running outdoors, active noise cancelling matters less than a good fit and an ambient mode, and turning it off saves battery. It is useful if you also want the earbuds for commuting or flights. If you only need them for running, a simpler sport model without noise cancelling is often cheaper, lighter and more secure.
""")],
    ),
    Spec(
        qid="lme-015", qtype="single-session-preference",
        question="I'd like to plan a weekend away next month. What kind of place would you suggest?",
        answer="The user would prefer a quiet, nature-focused getaway, such as a cabin by a lake or in the mountains with hiking nearby, where their dog Otis is welcome; they dislike crowded city breaks and tourist hotspots.",
        asked="2023/09/05 20:20", start="2023/02/10", avoid=frozenset({"travel"}),
        evidence=[Evidence("2023/05/30 18:10", "fitness", """
U: I need new hiking boots. My old ones gave me blisters on our last trip. What should I look for?
A: Fit is by far the most important thing. Try boots on in the afternoon, when your feet are slightly swollen, and wear the socks you hike in. There should be a thumb's width of space in front of your toes, and your heel should not lift much when you walk uphill. Decide whether you want lightweight hiking shoes or mid-height boots with more ankle support, depending on the terrain and the weight you carry.
U!: Mostly day hikes. Honestly my favorite weekends are at a little cabin by a lake somewhere, with trails right from the door. We tried a city break in the spring and I hated it, it was shoulder to shoulder with tourists everywhere. Plus our dog Otis comes with us everywhere, so it has to be somewhere he can run around.
A: For day hikes on trails, lightweight mid-height boots or sturdy trail shoes with a grippy sole are a good choice, and they usually need little breaking in. Waterproof membranes are useful around lakes and wet meadows, but they are warmer in summer. Wear the new boots around the house and on short walks for a week or two before a longer hike, and pair them with merino or synthetic socks rather than cotton to prevent blisters.
U: Makes sense. Should I get insoles too?
A: Many people are fine with the stock insoles, but if you have high arches, flat feet or recurring heel pain, a supportive aftermarket insole can improve comfort a lot. Bring your insoles when you try on boots, since they change the fit. If blisters keep appearing in the same place, lacing techniques such as a heel lock can also help.
""")],
    ),
    Spec(
        qid="lme-016", qtype="single-session-preference",
        question="I'm thinking about getting a new laptop for my side projects. What would you recommend?",
        answer="The user would prefer a lightweight laptop with strong Linux support (they run Fedora and do not want macOS), a comfortable keyboard like their old ThinkPad's, and a price of about $1,000 or less.",
        asked="2023/11/12 16:00", start="2023/05/01",
        evidence=[Evidence("2023/08/02 21:15", "coding", """
U: I'm setting up a new development environment for some side projects, mostly Python and a bit of Go. What's a clean way to manage multiple Python versions?
A: A popular approach is to use a version manager so each project can have its own interpreter. pyenv installs and switches between Python versions, and you can pair it with virtual environments per project. Newer tools such as uv can manage both Python versions and dependencies and are very fast. Whatever you choose, keep project dependencies in a lock file so you can recreate the environment on another machine.
U!: I run Fedora on everything, so I'd prefer something that's easy there. I had to use a MacBook at my old job and honestly hated it, I'm never going back to macOS. My ThinkPad is seven years old and the keyboard is the only thing I really love about it, so I'll probably replace it soon, but nothing over about a thousand dollars.
A: On Fedora, both pyenv and uv work well. Install the build dependencies for compiling Python first, using the list in the pyenv documentation, then install pyenv with its installer script and add it to your shell configuration. Alternatively, uv is a single binary and can download prebuilt Python versions, which avoids compiling altogether. For Go, the version in the Fedora repositories is usually recent, or you can install the official tarball into your home directory.
U: I'll try uv. Anything I should put in my dotfiles?
A: Useful additions are shell completions for uv, an alias to create and activate a project virtual environment quickly, and environment variables that keep caches in a predictable place. Many people keep their dotfiles in a git repository and use a small script or a tool such as GNU Stow to link them, which makes setting up a new machine much faster.
""")],
    ),
    Spec(
        qid="lme-017", qtype="single-session-preference",
        question="Can you recommend a film for me to watch tonight?",
        answer="The user would prefer a slow-burn psychological thriller, and enjoys foreign-language (for example Korean or Scandinavian) films with subtitles; they dislike superhero blockbusters and jump-scare horror.",
        asked="2023/12/15 19:30", start="2023/06/01", avoid=frozenset({"movies"}),
        evidence=[Evidence("2023/09/24 15:20", "home", """
U: I'm thinking of getting a projector for the living room instead of a bigger TV. Is that a good idea for a room with a big window?
A: Projectors can create a wonderful cinema feel, but ambient light is their biggest weakness. In a room with a big window, you will need blackout curtains or blinds to get good contrast during the day, or you may find yourself watching mostly in the evening. Look for a projector with at least 2,000 to 3,000 ANSI lumens for a living room, and a screen with some ambient-light rejection if the room cannot be made very dark.
U!: We'd mostly watch in the evenings. I'm the film person in the house, I love slow-burn thrillers, a lot of Korean and Scandinavian stuff with subtitles. My flatmate keeps putting on superhero movies and jump-scare horror, which I can't stand, so maybe this will finally give me a proper setup for my own picks.
A: For evening viewing with the lights off, a good 1080p or 4K home-cinema projector will look excellent. Since you watch a lot of subtitled films, make sure the image is sharp enough that small text is crisp at your seating distance, and consider a throw ratio that allows the projector to sit behind the sofa. A short-throw model is a good option if the room is small or you want to avoid cables across the ceiling.
U: What about sound?
A: Built-in projector speakers are usually weak, so plan for a soundbar or a small pair of powered speakers. A soundbar with a wireless subwoofer is the easiest upgrade and connects through HDMI ARC from a streaming stick or receiver. Place the sound near the screen rather than the projector, so voices seem to come from the picture.
""")],
    ),
    Spec(
        qid="lme-018", qtype="single-session-preference",
        question="Could you put together a workout plan for me?",
        answer="The user would prefer short home workouts of about 25 minutes before work, using their 12 kg kettlebell and bodyweight, with no running or jumping because of a bad left knee from a skiing accident; they have no gym membership.",
        asked="2023/06/27 07:10", start="2023/01/10", avoid=frozenset({"fitness"}),
        evidence=[Evidence("2023/03/19 10:05", "health", """
U: I've been feeling really sluggish in the mornings and I'm wondering whether exercising before work would help, or whether I'd just be more tired.
A: Many people find a short morning workout increases their energy for the rest of the day, especially after the first couple of weeks while the body adjusts. Moderate exercise raises alertness, improves mood, and can help you sleep better at night. The key is to keep it manageable, so it does not feel like a chore, and to eat a light snack if you feel weak training on an empty stomach.
U!: I'd have to do it at home, I don't have a gym membership. I've got a 12 kg kettlebell and that's about it, and realistically twenty-five minutes max before I have to leave. Also my left knee has been bad since a skiing accident, so running and jumping are out.
A: That setup is enough for a very effective routine. Kettlebell swings, goblet squats to a comfortable depth, rows, presses and carries work the whole body, and many can be adapted to protect a sensitive knee by limiting depth and avoiding pivoting. Start with lighter sessions to learn the movements, especially the swing, which is a hip hinge and should not be a squat. If a movement causes knee pain, swap it for a hip-dominant alternative such as glute bridges.
U: How often should I do it?
A: Three sessions a week on non-consecutive days is a good starting point, with a short walk or mobility work on the other days if you like. After a month, you can add a fourth day or increase the intensity. Consistency matters much more than any single workout, so pick days you can realistically stick to.
""")],
    ),
    # -- multi-session ------------------------------------------------------
    Spec(
        qid="lme-019", qtype="multi-session",
        question="How many different countries have I traveled to this year?",
        answer="Three: Portugal (Lisbon and Porto), Japan (Kyoto) and Mexico (Oaxaca).",
        asked="2023/09/15 20:00", start="2023/01/08", avoid=frozenset({"travel"}),
        evidence=[
            Evidence("2023/03/06 19:30", "photo", """
U!: I just got back from a week in Lisbon and Porto and I have about 900 photos on my phone. How do I sort through them without spending every evening on it?
A: The trick is to do several quick passes rather than trying to decide on each photo at once. First, delete obvious failures, such as blurry shots and accidental pocket photos, very quickly. Then, for each burst or group of similar shots, keep only the best one. Finally, mark favorites for a smaller album you would actually show people. Most phones let you select many photos at once by dragging, which makes the first passes fast.
U: And then how should I back them up?
A: Use at least two copies in different places: a cloud photo service that uploads automatically, plus an external drive or a computer at home that you copy to every few months. Check that the cloud service keeps the original resolution if that matters to you. Naming album folders by year, month and trip makes them easy to find later.
U: Should I bother editing them?
A: Light editing of your favorites can make a big difference, while editing everything is rarely worth the time. Straightening the horizon, cropping, and adjusting brightness and warmth take seconds on a phone. Many people edit just the 20 to 30 photos that go into the final album.
"""),
            Evidence("2023/05/02 08:10", "health", """
U: I got back from Kyoto four days ago and I'm still waking up at 3 am every night. It was my first time in Japan and it was amazing, but this jet lag is brutal. How do I reset?
A!: Flying east to west after a long trip can leave you waking very early for a week or more. To reset, get bright light in the evening and avoid bright light in the early morning hours, which pushes your body clock later. Stay in bed quietly if you wake at 3 am rather than checking your phone, keep your wake-up time fixed, and avoid long naps during the day. Caffeine only in the morning will help the evenings feel sleepy.
U: Would a late workout help me stay up later?
A: Moderate exercise in the late afternoon or early evening can help shift your clock later and make you tired at a normal bedtime. Avoid intense workouts in the last hour before bed, since they can make it harder to fall asleep. A walk outside in the early evening combines light and activity, which is ideal.
U: Thanks, I'll try that tonight.
A: Good luck. Most people adjust at about one hour per day, so you should be back to normal within a week or so.
"""),
            Evidence("2023/08/20 12:25", "cooking", """
U: I'm obsessed with the mole I had in Oaxaca last week, we only got back on Thursday. Is it realistic to make mole negro at home?
A: It is realistic, but it is a project. Mole negro traditionally uses several dried chiles, such as chilhuacle negro, mulato and pasilla, plus charred tomatoes, onion and garlic, nuts and seeds, spices, dried fruit, bread or tortillas, and chocolate. Everything is toasted or charred separately, blended and then fried and simmered into a dark, glossy sauce. Plan on a whole afternoon and make a big batch, since it freezes very well.
U!: Where would I even get the chiles? I'm not in Mexico anymore, sadly.
A: Latin American grocery stores often carry mulato, pasilla and ancho chiles, and online spice shops sell most varieties, including chilhuacle when it is available. If you cannot find chilhuacle negro, a mix of more mulato and pasilla gives a similar dark, fruity depth. Buy chiles that are still soft and pliable, not brittle, because they have more flavor.
U: Nice. And the chocolate?
A: Mexican table chocolate, which contains sugar and cinnamon, is traditional. If you use dark chocolate instead, add a little sugar and a pinch of cinnamon. Add it near the end, tasting as you go, since the balance of bitterness, sweetness and heat is what makes the sauce.
"""),
        ],
    ),
    Spec(
        qid="lme-020", qtype="multi-session",
        question="What's the total I've paid for repairs around the house so far?",
        answer="$2,550 in total: $1,200 for the roof leak, $950 for the new water heater and $400 as their share of the fence.",
        asked="2023/10/30 21:15", start="2023/02/01", avoid=frozenset({"house"}),
        evidence=[
            Evidence("2023/03/18 11:40", "finance", """
U!: We had a roof leak over the bedroom after that big storm and the roofer charged us $1,200 to fix the flashing. Our homeowners insurance deductible is $1,500, so I guess it wasn't worth claiming? I'm trying to figure out whether our insurance is even set up right.
A: Since the repair cost less than your deductible, the insurer would not have paid anything, so not claiming was the right call; small claims can also raise premiums. It is worth reviewing your policy once a year. Check the dwelling coverage against current rebuilding costs, the deductible level, whether water damage from sudden leaks is covered, and whether you have replacement cost coverage for belongings.
U: Would raising the deductible save money?
A: Usually yes. A higher deductible lowers your premium, sometimes by 10 to 25 percent, but it means you pay more yourself when something happens. It makes sense if you have an emergency fund that can comfortably cover the higher amount. Ask your insurer for quotes at a few deductible levels and compare the yearly savings with the extra risk.
"""),
            Evidence("2023/06/11 17:55", "home", """
U: Our gas bill has been creeping up. Are there easy ways to lower it?
A: A few changes usually make a noticeable difference. Lower the thermostat by a degree or two and use a programmable schedule, seal draughts around doors and windows, and service the boiler or furnace so it runs efficiently. Shorter showers and washing laundry at lower temperatures reduce hot water use, which is often a big share of gas consumption.
U!: We actually had to replace the water heater last month, the old one started leaking, and the new one with installation came to $950. Should that help the bill at all?
A: It likely will. Older water heaters lose efficiency over time as sediment builds up and insulation degrades, so a new unit usually heats water with less gas. Check that its temperature is set to around 50 to 60 degrees Celsius, which is hot enough for safety without wasting energy. Flushing the tank once a year and insulating the first meter or so of hot water pipe will help keep it efficient.
U: Good to know. I'll check the temperature setting tonight.
A: Good idea. Also note the date of installation and the warranty details somewhere you can find them, since many warranties require yearly maintenance to stay valid.
"""),
            Evidence("2023/08/27 14:05", "home", """
U: The fence between us and our neighbors blew down partly in the spring. How do people usually handle splitting the cost with a neighbor?
A: In many places, boundary fences are a shared responsibility, and neighbors commonly split the cost equally when both benefit. Local rules vary, so check your municipality's guidance and your property deeds, which sometimes say who owns which boundary. Talk to your neighbor before doing anything, get a couple of quotes together, and put the agreement in writing, even as a simple email.
U!: We sorted it in the end, the repair came to $800 and we split it down the middle, so I paid $400. Now I want to stain it so it lasts. What kind of stain?
A: For a wooden fence, a penetrating, oil-based or water-based exterior stain designed for fences and decks is a good choice. Semi-transparent stains show the wood grain and are easy to refresh, while solid stains hide imperfections and last longer but can peel. Let new wood dry for a few weeks first, clean it, and apply stain on a dry, mild day with no rain forecast for 24 hours.
U: Should I ask the neighbor before staining their side?
A: Yes, it is polite to ask, since they see one side and may have a preference for color. Many people stain only their own side unless the neighbor wants to share the cost. Agreeing on the color for both sides avoids any awkwardness later.
"""),
        ],
    ),
    Spec(
        qid="lme-021", qtype="multi-session",
        question="How many plants have I bought for my balcony so far this year?",
        answer="Nine: four tomato seedlings, three herb pots (basil, thyme and mint) and two lavender plants.",
        asked="2023/07/20 18:30", start="2023/01/20", avoid=frozenset({"garden"}),
        evidence=[
            Evidence("2023/04/15 12:00", "garden", """
U!: I picked up four tomato seedlings at the farmers market this morning for my balcony. It's south-facing and gets sun most of the day. What size pots do they need?
A: Tomatoes have large root systems, so give each plant a pot of at least 20 liters, and ideally 30 to 40 liters for larger indeterminate varieties. Bigger pots dry out more slowly, which reduces stress and problems like blossom end rot. Make sure the pots have drainage holes, and use a good-quality potting mix rather than garden soil.
U: Should I put them outside now or wait?
A: Wait until nighttime temperatures are reliably above about 10 degrees Celsius. Before planting out, harden them off for a week by putting them outside for a few hours a day and gradually increasing the time and sun exposure. On a hot south-facing balcony, they may also need some shade in the afternoon for the first few days.
U: Got it. And staking?
A: Put the stakes or cages in when you plant, so you do not damage the roots later. Tie the main stem loosely with soft ties as it grows. For indeterminate varieties, pinching out the side shoots that grow between the stem and leaves keeps the plant manageable on a balcony.
"""),
            Evidence("2023/05/10 19:20", "cooking", """
U: I want to cook more with fresh herbs. Which herbs go best with which dishes?
A: A few classic pairings: basil with tomatoes, mozzarella, pasta and pesto; thyme with roast chicken, potatoes, mushrooms and stews; mint with lamb, peas, yogurt sauces and drinks; rosemary with roast meats and potatoes; and parsley and cilantro as fresh finishing herbs for almost anything. Soft herbs are best added at the end, while woody herbs can go in early.
U!: Perfect timing, I just bought three herb pots for the balcony, basil, thyme and mint. How do I keep them alive? I've killed supermarket basil before.
A: Supermarket basil is usually many seedlings crammed into one pot, so separating it into three or four clumps and repotting them helps a lot. Basil likes warmth, sun and regular water, and pinching off the tops just above a pair of leaves makes it bushier. Thyme prefers to dry out between waterings. Mint is vigorous and best kept in its own pot, since it spreads aggressively.
U: Can I harvest as much as I want?
A: Take no more than about a third of the plant at a time, so it can keep growing. Harvest regularly from the top rather than stripping lower leaves, and pinch off flower buds on basil to keep the leaves tender.
"""),
            Evidence("2023/06/24 10:45", "garden", """
U: I want the balcony to attract bees and butterflies. What flowers are good in pots?
A: Lavender, salvia, catmint, thyme when it flowers, cosmos, marigolds and sunflowers are all pollinator favorites that grow well in containers. Choose single-flowered varieties, because double flowers often have little nectar or pollen. A shallow dish of water with pebbles also gives bees a safe place to drink on hot days.
U!: I went ahead and added two lavender plants yesterday, so the balcony is getting full. Do they need special soil?
A: Lavender needs sharp drainage and hates wet roots. Use a gritty mix, for example potting compost with about a third grit or perlite, and a terracotta pot with a drainage hole. Water it well after planting, then only when the top few centimeters are dry. It thrives in full sun, so a south-facing balcony suits it well.
U: When do I prune it?
A: Trim it lightly after flowering, removing the spent flower stems and a little of the foliage, and never cut into old, bare wood, because it rarely regrows from there. A light shape in late summer keeps it compact and stops it from becoming leggy.
"""),
        ],
    ),
    Spec(
        qid="lme-022", qtype="multi-session",
        question="Can you list the names of all the animals I have at home?",
        answer="Miso (a cat), Clover (a rabbit) and Juniper (a dog).",
        asked="2023/11/05 11:30", start="2023/03/01", avoid=frozenset({"pets", "dog"}),
        evidence=[
            Evidence("2023/04/04 20:50", "home", """
U: I'm looking for a vacuum that's actually good with pet hair. The one I have just pushes it around.
A: For pet hair, look for strong suction, a motorized brush roll with a tangle-resistant design, and a sealed system with a HEPA filter if anyone has allergies. Cordless stick vacuums are convenient for daily quick cleans, while a corded upright or canister is better for deep cleaning carpets. A small motorized pet tool for upholstery and stairs is very handy.
U!: It's mainly Miso, she's a fluffy grey cat who sheds like crazy and loves sleeping on the sofa. So sofa and rugs are the main problem areas.
A: For sofas, a handheld attachment with a motorized brush works well, and a rubber grooming glove or a damp rubber glove run over the fabric pulls hair into clumps before vacuuming. For rugs, vacuum slowly in two directions. Washable throws on her favorite spots save a lot of effort, and regular brushing reduces how much hair ends up on the furniture at all.
U: Are robot vacuums worth it for this?
A: A robot vacuum can be great for keeping hair under control between deeper cleans, especially on hard floors and low rugs. Choose one with a rubber brush roll that resists tangles and a self-emptying base if you can afford it. It will not replace cleaning the sofa, but it reduces the daily build-up.
"""),
            Evidence("2023/06/15 18:05", "home", """
U: Our landlord is doing an inspection next week. Any tips for getting the flat ready so it goes smoothly?
A: Focus on cleanliness and showing you look after the place. Clean kitchen and bathroom surfaces, descale taps, clear clutter from floors, and open windows to air the rooms. Check for and report any maintenance issues, such as dripping taps or damaged fittings, rather than hoping they are missed. Make sure smoke alarms work and that radiators and vents are not blocked.
U!: Our lease allows small pets, but I'm a bit nervous because of Clover, our house rabbit. She free-roams in the living room and she has chewed a tiny corner of the skirting board.
A: Since small pets are allowed, the main thing is showing that any damage is minor and being handled. You could lightly sand and touch up the chewed spot with matching paint, or mention it upfront and offer to fix it. Rabbit-proofing with skirting board protectors or corner guards, and providing plenty of chew toys and hay, will prevent it from happening again. Keep her enclosure and litter area very clean on inspection day.
U: Good idea, I'll order some protectors.
A: Clear plastic protectors are nearly invisible and easy to remove when you move out. Cardboard tunnels and willow balls also give her something better to chew.
"""),
            Evidence("2023/09/03 16:35", "pets", """
U: Any advice for introducing a new dog to a household with a cat and a rabbit? We're fostering-to-adopt a greyhound.
A: Greyhounds can live with small pets, but many have a strong prey drive, so introductions should be slow and controlled. Keep the dog on a lead and muzzle for the first meetings, let the other animals observe from safe spaces, and reward the dog for calm behavior. Always keep the rabbit completely separated unless you are present, and give the cat high escape routes. Ask the rescue whether the dog has been cat-tested.
U!: The adoption went through on Friday, her name is Juniper. She's super gentle with the cat so far, but she stares at the rabbit's pen a lot.
A: Staring and fixating is worth taking seriously with a sighthound. Keep the rabbit's space physically out of reach, and practice a look-at-me cue with high-value treats whenever Juniper notices the pen, rewarding her for turning away. Short, positive sessions several times a day work best. If the fixation does not fade over a few weeks, a behaviorist experienced with sighthounds can help.
U: OK, we'll keep them totally separate for now.
A: That is the safest choice. Many greyhounds become much more relaxed once they settle into home life, so give her time and celebrate the small wins.
"""),
        ],
    ),
    Spec(
        qid="lme-023", qtype="multi-session",
        question="What is the combined distance of the races I've run this year?",
        answer="About 19.3 miles (31.1 km): a 10K in March and a half marathon in May.",
        asked="2023/08/12 09:00", start="2023/01/15", avoid=frozenset({"running"}),
        evidence=[
            Evidence("2023/03/20 18:40", "cooking", """
U!: I ran my first ever 10K yesterday and my legs are wrecked. What should I eat in the next couple of days to help recovery?
A: Congratulations on your first 10K. For recovery, focus on three things: carbohydrates to refill muscle glycogen, protein to help repair muscle, and fluids and electrolytes to rehydrate. A meal with rice, potatoes or pasta plus a good portion of chicken, fish, eggs, tofu or beans covers the basics. Colorful fruit and vegetables add antioxidants, and a glass of milk or yogurt is an easy protein boost.
U: Are those recovery drinks worth buying?
A: For a 10K, they are not necessary. A normal balanced meal within a few hours, or a snack like chocolate milk or yogurt with fruit, works just as well. Recovery drinks are mainly about convenience, for example after a long run when you cannot eat a proper meal soon.
U: My calves are the worst. Anything for that?
A: Gentle walking, light stretching and a warm bath can ease calf soreness. Foam rolling or massage may help you feel better, and the soreness usually peaks one to two days after the race before fading. Take a few easy days before running hard again.
"""),
            Evidence("2023/05/22 20:15", "fitness", """
U: I finally bought a foam roller. How do I actually use it without hurting myself?
A: Roll slowly over each muscle group for about 30 to 60 seconds, pausing on tender spots for a few breaths, with moderate pressure that feels uncomfortable but not painful. Avoid rolling directly over joints, bones and the lower back. Common areas for runners are the calves, hamstrings, quads, glutes and the muscles around the hips.
U!: My quads are super tight after the half marathon on Sunday, it was my first one and I'm still walking like a penguin. Is it OK to roll them now?
A: Congratulations on finishing your first half marathon. In the first couple of days, keep rolling gentle and short, since the muscle fibers are still recovering and heavy pressure can feel worse. Easy walking, light cycling and sleep are your best friends this week. From around day three, you can roll more firmly if it feels good.
U: When can I start running again?
A: A common guideline is to take about one easy day per mile raced before hard training, so around two weeks before intense workouts. Short, very easy runs can resume after a few days if you feel fresh. Listen to your body and keep the first week back relaxed.
"""),
        ],
    ),
    Spec(
        qid="lme-024_abs", qtype="multi-session",
        question="How many concerts have I been to with my brother this year?",
        answer="You did not mention going to any concerts with your brother. You mentioned two concerts this year, one with coworkers and one with your girlfriend, but none with a brother.",
        asked="2023/10/14 13:00", start="2023/03/01", avoid=frozenset({"music"}),
        evidence=[
            Evidence("2023/05/07 12:30", "health", """
U!: My ears have been ringing since a concert on Friday with some coworkers. We were pretty close to the speakers. Should I be worried?
A: Ringing in the ears after a loud concert is common and usually fades within a day or two as the inner ear recovers. Rest your ears by avoiding loud noise, including headphones, for a few days. If the ringing lasts more than a couple of weeks, or you notice hearing loss, muffled sound or pain, see a doctor or an audiologist.
U: What should I do next time?
A: Wear earplugs at concerts. High-fidelity musician earplugs reduce volume evenly so music still sounds clear, and they are small and inexpensive. Standing away from the speakers and taking short breaks outside the main hall also helps.
"""),
            Evidence("2023/07/30 11:50", "music", """
U: Are those musician earplugs really better than the foam ones?
A: For music, yes. Foam earplugs block high frequencies more than low ones, so music sounds muffled, while high-fidelity earplugs use filters to reduce volume fairly evenly across frequencies, keeping music clear. They are also reusable and more comfortable for long sets. Foam plugs are still excellent for sleeping or very noisy work.
U!: Good, I bought a pair before the outdoor festival set my girlfriend and I went to last weekend and they were great. I could actually hear the vocals better.
A: That is a common experience: reducing overall volume can make details clearer, because your ears are not overloaded. Keep them in their case, clean them with a damp cloth, and replace the filters or tips when they wear out. Having a pair on your keychain means you will always have them for surprise loud events.
"""),
        ],
    ),
    # -- temporal-reasoning -------------------------------------------------
    Spec(
        qid="lme-025", qtype="temporal-reasoning",
        question="How many days before my sister's wedding did I buy my suit?",
        answer="32 days: the suit was bought on May 2, 2023 and the wedding was on Saturday, June 3, 2023.",
        asked="2023/07/10 19:00", start="2023/01/20", avoid=frozenset({"wedding"}),
        evidence=[
            Evidence("2023/05/02 19:40", "shopping", """
U!: I bought a navy suit this afternoon for my sister's wedding. It fits well in the shoulders but the trousers are too long and the sleeves cover half my hand. What alterations are normal?
A: Those are the two most common and least expensive alterations, so you are in good shape. Hemming trousers and shortening sleeves are routine for almost any tailor. Ideal sleeve length shows about one to two centimeters of shirt cuff, and trousers should have a slight or no break at the shoe, depending on the style you like. Bring the shoes and a shirt you plan to wear to the fitting, so the tailor can set the lengths correctly.
U: How long do alterations usually take?
A: Simple hems and sleeves often take one to two weeks, but tailors get very busy in wedding season, so ask when you drop it off. Schedule a final try-on a few days before any important date, in case a small adjustment is needed.
U: Should I get the jacket taken in at the waist too?
A: If there is excess fabric bunching when you button the jacket, a slight taper at the waist can make a big difference in how sharp it looks. It is a moderate alteration and usually worth it. Make sure you can still sit comfortably and move your arms with the jacket buttoned.
"""),
            Evidence("2023/06/05 10:15", "wedding", """
U!: My sister's wedding was this past Saturday and my speech actually went well! Now I have to write thank-you notes to the relatives who helped out. How formal should they be?
A: Congratulations on the speech. Thank-you notes to relatives can be warm and personal rather than formal. Mention the specific help they gave, such as hosting the rehearsal dinner or driving guests, say how it made a difference, and include a personal memory from the day. Three or four sentences by hand on a nice card is perfect.
U: Is email OK or should it be handwritten?
A: Handwritten notes are still appreciated for weddings, especially by older relatives, and they feel more personal. Email or a message is fine for close friends or younger family members who would not expect a card. The most important part is sending them within a few weeks, while the day is fresh.
U: Perfect, I'll get some cards today.
A: Great. Keep a simple list of who helped with what, so you do not forget anyone, and tick them off as you go.
"""),
        ],
    ),
    Spec(
        qid="lme-026", qtype="temporal-reasoning",
        question="Which did I start first, the Spanish course or the pottery class?",
        answer="The Spanish course, in mid-February 2023 (the week before February 20); the first pottery class was about a month later, on March 13, 2023.",
        asked="2023/06/01 18:20", start="2022/12/15", avoid=frozenset({"language", "crafts"}),
        evidence=[
            Evidence("2023/02/20 20:05", "language", """
U!: I started Spanish classes at the community center last week, two evenings a week. The teacher talks super fast and I feel lost. How can I keep up?
A: Feeling lost in the first weeks is completely normal, especially in a class taught mostly in the target language. Review the material from each class within a day, even for 15 minutes, and preview the next topic if you know it. Ask the teacher for the vocabulary list or slides. Outside class, listening to slow Spanish podcasts or children's programs helps your ear adjust to the speed.
U: Any good way to practice speaking? I feel shy.
A: Language exchange apps and conversation meetups let you practice with native speakers who are learning your language, which takes pressure off. Talking to yourself in Spanish while cooking or walking also helps, because it builds fluency without an audience. In class, prepare one or two sentences before each session that you can use when called on.
U: Thanks, I'll look for a meetup.
A: That is a great step. Even one conversation a week will make the classes feel easier within a month or two.
"""),
            Evidence("2023/03/14 09:30", "crafts", """
U!: I had my first pottery class last night and my bowl collapsed on the wheel three times. Is centering clay always this hard?
A: Centering is the hardest skill for almost every beginner, so three collapses on the first night is very normal. Brace your elbows against your thighs or the wheel tray so your hands stay steady, use enough water to keep the clay slick but not soggy, and run the wheel fairly fast while centering. Push the clay into a cone and back down a few times to help it run true.
U: Why does the clay go lopsided when I open it?
A: If the clay is not fully centered, opening it exaggerates the wobble. Also, opening too fast or unevenly pushes clay to one side. Keep your hands connected, brace them, and open slowly with the wheel at a moderate speed. Practice will make the feel of centered clay obvious.
U: I'll keep at it, it was still fun.
A: That is the right attitude. Most potters say they threw a lot of lopsided bowls before the first good one, and that is part of the fun.
"""),
        ],
    ),
    Spec(
        qid="lme-027", qtype="temporal-reasoning",
        question="How many weeks ago did I adopt my cat?",
        answer="8 weeks ago: the kitten was adopted on July 8, 2023.",
        asked="2023/09/02 10:00", start="2023/03/01", avoid=frozenset({"pets"}),
        evidence=[Evidence("2023/07/08 15:45", "pets", """
U!: We adopted a little tabby from the shelter this morning! She's about ten weeks old and she's hiding under the bed. Should I try to get her out?
A: Congratulations. It is completely normal for a kitten to hide after a move, and it is best not to pull her out. Set up a small, quiet room with food, water, a litter box and a hiding spot, and let her explore at her own pace. Sit in the room quietly and let her approach you; a wand toy can help build confidence. Most kittens start exploring within a day or two.
U: When should we take her to the vet?
A: Book a check-up within the first week or two, especially to continue her vaccinations, deworming and flea treatment, and to discuss spaying, usually done around four to six months. Bring any records the shelter gave you so the vet can plan the schedule.
U: What should she be eating?
A: A good-quality kitten food, which has more protein and calories than adult food, is important until about one year old. Feed several small meals a day, and make fresh water always available. If the shelter was feeding a particular food, keep it the same at first to avoid upsetting her stomach, and switch gradually if you want to change.
""")],
    ),
    Spec(
        qid="lme-028", qtype="temporal-reasoning",
        question="What was the first problem I had with my car after buying it?",
        answer="The tire pressure warning light kept coming on (early March 2023); the air conditioning stopped blowing cold later, in May.",
        asked="2023/08/15 17:40", start="2023/01/05", avoid=frozenset({"car"}),
        evidence=[
            Evidence("2023/02/11 14:00", "car", """
U!: We picked up a used 2019 Honda CR-V from a dealer yesterday. What should I do in the first few weeks of owning a used car?
A: A few checks will give you peace of mind. Read the owner's manual and the service history, and find out when the next service, timing, brake fluid and coolant changes are due. Check tire pressures and tread, all lights, and the spare tire and jack. Register for any manufacturer recalls with the vehicle identification number, and make sure both keys work.
U: The dealer did an oil change before we collected it. Anything else?
A: Keep the dealer's paperwork and warranty terms in a safe place, since many used-car warranties require servicing on schedule. Drive the car in different conditions in the first weeks, and make a list of anything odd, such as noises or warning lights, to raise with the dealer while you are still in any warranty or return period.
"""),
            Evidence("2023/03/05 09:50", "car", """
U!: The tire pressure warning light on the CR-V keeps coming on every few days, even though I've checked the tires and they look fine. What could it be?
A: Tire pressure monitoring systems react to small changes, and tires can lose pressure slowly in ways you cannot see. Check each tire, including the spare if it has a sensor, with a gauge when the tires are cold, and inflate to the pressure on the driver's door sticker. Cold mornings lower pressure, so a light that appears on cold days and disappears later is common. If one tire keeps dropping, it may have a slow puncture or a leaking valve.
U: And if the pressures are all correct?
A: Then the system may need to be recalibrated, which on many cars is done through a menu or a button after inflating the tires. A failing sensor battery is another possibility, since sensors typically last around five to ten years. A tire shop can read the sensors and tell you which one is faulty.
"""),
            Evidence("2023/05/14 16:20", "car", """
U!: Now the AC in the CR-V has stopped blowing cold air, just in time for the warm weather. It blows, but it's barely cool. Is this expensive?
A: It depends on the cause. The most common reason is low refrigerant due to a small leak, which a shop can find with dye and fix, and then recharge the system; that is usually moderate in cost. A faulty compressor clutch, relay or condenser fan can also cause it. A compressor replacement is the expensive case. Ask the shop to diagnose first rather than simply topping up the refrigerant, since it will leak out again.
U: Could it just be the cabin filter?
A: A clogged cabin air filter reduces airflow and can make the AC feel weaker, but it does not usually stop the air from being cold. Still, it is cheap and easy to replace, often behind the glove box, so it is worth checking. If the airflow is strong but warm, the issue is almost certainly in the refrigerant system.
"""),
        ],
    ),
    Spec(
        qid="lme-029", qtype="temporal-reasoning",
        question="How many months have I been at my current job?",
        answer="About five months: the first day was January 16, 2023.",
        asked="2023/06/20 08:30", start="2022/12/01", avoid=frozenset({"job"}),
        evidence=[Evidence("2023/01/16 20:20", "job", """
U!: Today was my first day at the new job, I'm coordinating dispatch at a logistics company, and I'm exhausted. Everyone was nice but there were so many names and systems. How do I survive the first few weeks?
A: Feeling overwhelmed on day one is completely normal. Keep a notebook or a document with names, roles and what each system is for, and review it each evening. Ask your manager what success looks like in your first 30, 60 and 90 days. Focus on learning how work flows through the team rather than memorizing everything at once, and do not be afraid to ask questions now, while it is expected.
U: How do I remember everyone's names?
A: Repeat a name when you are introduced, use it once in conversation, and jot it down afterwards with a detail, such as runs the night shift or sits by the window. An org chart or team directory helps if your company has one. Most people are understanding in the first weeks and will not mind reminding you.
U: OK, that helps. I'll start a notes file tonight.
A: Good idea. Also note the acronyms and abbreviations you hear; logistics teams tend to use a lot of them, and building your own glossary will make meetings much easier to follow.
U: My manager wants me shadowing the night shift next week. Any tips for staying alert?
A: Try to shift your sleep a little in the days before, going to bed and waking later, and take a nap of 60 to 90 minutes in the late afternoon before the first shift. Bright light at the start of the shift helps alertness, and caffeine works best early in the shift rather than near the end. Eat light meals and keep snacks simple, since heavy food at night can make you drowsy. Afterwards, wear sunglasses on the way home and sleep in a dark, quiet room.
""")],
    ),
    Spec(
        qid="lme-030_abs", qtype="temporal-reasoning",
        question="How many days did my trip to Iceland last?",
        answer="You never mentioned a trip to Iceland. You did mention a trip to Norway, from June 10 to June 18, 2023.",
        asked="2023/09/25 21:00", start="2023/03/10", avoid=frozenset({"travel"}),
        evidence=[Evidence("2023/06/20 19:10", "travel", """
U!: We're back from Norway, we flew out on the 10th and got home on the 18th. I have so many fjord photos. What's a nice way to make a photo book?
A: Welcome back. Online photo book services let you upload photos, choose a layout and order a printed book in a week or two. To make it feel like a story, group the photos by day or place, choose one strong image to open each section, and mix full-page landscapes with pages of smaller detail shots. Short captions with the place name and a memory make it much more personal.
U: How many photos should go in?
A: For a trip of about a week, 80 to 150 photos usually makes a satisfying book of 30 to 50 pages without feeling crowded. Be ruthless about near-duplicates, and keep a few pages with a single photo, which gives the book room to breathe.
""")],
    ),
    # -- knowledge-update ---------------------------------------------------
    Spec(
        qid="lme-031", qtype="knowledge-update",
        question="What is my fastest 5K time now?",
        answer="25:55 (improved from 27:40 earlier in the year).",
        asked="2023/09/01 07:30", start="2023/01/10", avoid=frozenset({"running"}),
        evidence=[
            Evidence("2023/03/12 08:45", "fitness", """
U: I want to get faster at 5Ks. I run three times a week but it's always the same easy pace. What should I change?
A: The quickest way to improve is to add variety. Keep most of your running easy, but make one run a week a quality session, such as intervals, and one a longer easy run. A classic 5K session is 6 times 400 meters at goal race pace with 90 seconds of easy jogging between. Progress gradually, and include a proper warm-up before hard efforts.
U!: My PB is 27:40 from a parkrun in January and I'd love to get under 26 minutes by the end of summer. Is that realistic?
A: Taking almost two minutes off over six months is ambitious but realistic for someone who has not done structured training before, since early gains come quickly. Run intervals at around 5:10 per kilometer, which is your goal pace for 26 minutes, and tempo runs at a comfortably hard effort. Test yourself with a time trial every six to eight weeks to track progress.
U: What about strength training?
A: Two short strength sessions a week, with squats, lunges, calf raises, hip work and core exercises, improve running economy and reduce injury risk. They do not need to be long; 20 to 30 minutes is enough.
"""),
            Evidence("2023/06/25 11:15", "cooking", """
U!: I finally broke 26 minutes at parkrun yesterday, 25:55! I want to celebrate with a nice brunch at home. Any ideas that aren't too heavy?
A: Congratulations, that is a big improvement. For a celebratory but light brunch, try shakshuka with crusty bread, a big fruit salad with yogurt and granola, smoked salmon on rye with cucumber and dill, or a frittata with spring vegetables. Sparkling water with citrus or a mimosa makes it feel like an occasion.
U: Shakshuka sounds great. How spicy is it?
A: You can control the heat. Most recipes use sweet paprika and cumin with a pinch of chili flakes or a fresh chili; leave out the chili for a mild version, or add harissa for more heat. Serve it with yogurt or feta to balance any spiciness.
"""),
        ],
    ),
    Spec(
        qid="lme-032", qtype="knowledge-update",
        question="Which city am I living in these days?",
        answer="Boise (they moved there from Denver in June 2023).",
        asked="2023/10/11 20:45", start="2023/01/15", avoid=frozenset({"home-city", "moving"}),
        evidence=[
            Evidence("2023/02/08 21:30", "health", """
U!: My skin gets so dry and itchy in winter here in Denver, and my lips are constantly cracked. What helps?
A: Cold outdoor air and dry indoor heating pull moisture from your skin, and high altitude makes it worse. Take shorter, lukewarm showers, apply a thick, fragrance-free moisturizer while your skin is still slightly damp, and use a humidifier in the bedroom. For lips, a simple ointment-based balm applied often, especially before bed, works better than flavored balms, which can irritate.
U: Do I need a special humidifier?
A: A basic cool-mist humidifier is enough for a bedroom. Aim for 40 to 50 percent humidity, which you can check with an inexpensive hygrometer. Clean it regularly according to the instructions to prevent mold and bacteria, and use distilled water if your tap water leaves white dust.
"""),
            Evidence("2023/07/19 18:50", "home", """
U: What's the best way to meet people in a new city? I work remotely, so I don't have coworkers nearby.
A: Remote workers often find it hardest to meet people, so it helps to create regular, repeated contact with the same group. Join a weekly activity, such as a running club, climbing gym, choir, volunteering or a sports league, since seeing the same faces builds friendships naturally. Co-working spaces a few days a week can also help. Saying yes to invitations in the first months matters more than anything else.
U!: Since we moved to Boise last month I've mostly been unpacking. Is there anything specific to do here?
A: Boise has a strong outdoor culture, so hiking and trail running groups in the foothills, cycling along the Greenbelt and floating the river in summer are all social ways to meet people. Check community event listings, neighborhood association meetings and local library events too. Many newcomers also make friends through dog parks and volunteering with local trail organizations.
"""),
        ],
    ),
    Spec(
        qid="lme-033", qtype="knowledge-update",
        question="How many people report to me at work right now?",
        answer="Six (it was four before two new hires joined).",
        asked="2023/08/28 12:40", start="2023/01/05", avoid=frozenset({"job"}),
        evidence=[
            Evidence("2023/01/24 13:15", "job", """
U: I'm new to managing people and I want to set up good one-on-ones. How often and what should we talk about?
A: Weekly or biweekly one-on-ones of 30 minutes are common and effective. Make them the report's meeting: let them bring topics first, then cover your items. Useful recurring questions include what is going well, what is blocking them, and what kind of support they need. Keep short shared notes so follow-ups do not get lost, and avoid turning the time into a status update.
U!: I manage a team of four engineers, so weekly seems doable. Should I use a template?
A: A light template helps, especially when you are new. A simple shared document with sections for their topics, your topics, feedback both ways, and action items is enough. Every month or so, include a question about career growth, so development does not get lost in day-to-day work.
U: Thanks, I'll set that up.
A: Great. Also keep your calendar slots consistent, since regular, protected time signals that you value these conversations.
"""),
            Evidence("2023/05/30 19:05", "job", """
U: How do I onboard new team members well? I want them to feel productive in the first month.
A: Prepare before they arrive: accounts and hardware ready, a written onboarding plan, and a buddy from the team. In the first week, focus on relationships and context, then give a small, real task they can finish quickly. Set clear 30, 60 and 90 day goals, and check in more often than usual during the first month.
U!: We just hired two more engineers, so now I have six direct reports. Weekly one-on-ones with all of them is getting heavy. What should I do?
A: With six reports, many managers keep weekly one-on-ones for new hires during their first couple of months, then move some experienced engineers to every two weeks. Shortening some meetings to 25 minutes also helps. Make sure the team has other channels for quick questions, so one-on-ones are for deeper topics rather than status.
"""),
        ],
    ),
    Spec(
        qid="lme-034", qtype="knowledge-update",
        question="What is the target I set for my emergency fund?",
        answer="$15,000 (raised from the earlier goal of $10,000).",
        asked="2023/09/20 20:10", start="2023/01/01", avoid=frozenset({"finance", "budget"}),
        evidence=[
            Evidence("2023/02/15 21:00", "finance", """
U: Where should I keep my emergency fund? My regular savings account pays almost nothing.
A: An emergency fund should be safe and quickly accessible, so a high-yield savings account at a reputable, insured bank is usually the best home. Rates there are often much higher than at traditional banks. Money market accounts are another option. Avoid investing the emergency fund in stocks, since it may drop in value exactly when you need it.
U!: I'm aiming for $10,000 in total, which is about four months of our expenses. Right now we have around $3,500.
A: That is a sensible target. To reach it, set up an automatic transfer every payday, for example $400 a month would get you there in a little over a year. Windfalls such as tax refunds or bonuses can speed it up. Keep the account separate from your everyday checking, so it is not tempting to dip into it.
"""),
            Evidence("2023/06/12 20:35", "finance", """
U: We're expecting a baby in the autumn. What financial things should we sort out before then?
A: Congratulations. Key steps include reviewing your health insurance and what the birth will cost, checking parental leave pay at both your jobs, updating your budget for childcare and baby costs, and getting life insurance and wills in place. Also check whether you can add the baby to insurance easily after the birth and what deadlines apply.
U!: We decided to bump our emergency fund goal up to $15,000 because of the baby. We're at about $8,000 now.
A: That makes sense, since expenses and the cost of any disruption rise with a child. At $8,000, you are over halfway. If you can direct any remaining bonuses and reduce a few discretionary costs before the birth, you could close much of the gap, but it is fine for the fund to keep growing after the baby arrives too.
"""),
        ],
    ),
    Spec(
        qid="lme-035", qtype="knowledge-update",
        question="What time do I get up on weekdays these days?",
        answer="5:45 a.m. (it used to be 6:30 before they started a 6:30 spin class).",
        asked="2023/08/03 21:30", start="2023/01/10", avoid=frozenset({"routine"}),
        evidence=[
            Evidence("2023/03/02 07:15", "health", """
U!: I wake up at 6:30 on weekdays but I feel groggy until at least 9. Is there a better way to wake up?
A: Morning grogginess, called sleep inertia, is worse when you wake from deep sleep or are short on sleep. A consistent wake-up time, even on weekends, helps your body expect it. Open the curtains or get outside light within the first half hour, drink a glass of water, and move around a little. If you often hit snooze, put the alarm across the room so you have to get up.
U: Would a sunrise alarm clock help?
A: Many people find that a sunrise alarm, which gradually brightens the room before the alarm time, makes waking up feel gentler, particularly in winter. It does not replace enough sleep, but it can reduce the jolt of a loud alarm. Pair it with a consistent bedtime for the best effect.
"""),
            Evidence("2023/06/08 20:40", "fitness", """
U: I've started going to a 6:30 am spin class three times a week. What should I eat beforehand? I feel weak if I go on an empty stomach.
A: A small, easily digested snack 30 to 60 minutes before works well for early classes. Examples include a banana, a slice of toast with honey or peanut butter, a small bowl of oats, or a yogurt. Avoid large amounts of fat and fiber right before, which can upset your stomach. Drink some water when you wake up, and have a proper breakfast with protein afterwards.
U!: Since the class started I'm getting up at 5:45 on weekdays, even on non-class days to keep it consistent. So I have a bit of time for a snack.
A: Keeping the same wake-up time every day is a great choice for your body clock. With about 45 minutes before class, a banana or toast right when you get up gives it time to settle. If you still feel tired, try moving your bedtime earlier by 15 minutes each week until you get about seven to nine hours of sleep.
"""),
        ],
    ),
    Spec(
        qid="lme-036", qtype="knowledge-update",
        question="Which language am I currently learning?",
        answer="Japanese (they switched from Italian to prepare for a trip to Osaka).",
        asked="2023/09/14 19:50", start="2022/12/01", avoid=frozenset({"language"}),
        evidence=[
            Evidence("2023/01/10 20:25", "language", """
U!: I've been learning Italian for a couple of months with an app and a weekly tutor. I can read a bit but can't follow spoken Italian at all. How do I improve my listening?
A: Listening usually lags behind reading, so this is normal. Use materials slightly above your level: podcasts for learners, slow news, or series with Italian subtitles. Listen to the same short episode several times, first for the gist and then for details, and read the transcript afterwards. Shadowing, repeating along with the audio, improves both listening and pronunciation.
U: How many hours a week should I do?
A: Even 20 to 30 minutes of focused listening a day makes a big difference over a few months. Consistency matters more than long sessions. Try to combine it with things you already do, such as commuting or cooking.
"""),
            Evidence("2023/05/05 21:10", "language", """
U: What's the most efficient way to learn hiragana and katakana?
A: Most learners master hiragana in one to two weeks with spaced repetition flashcards and writing practice, followed by katakana. Learn the characters in rows, use mnemonic images to remember shapes, and read simple words as soon as possible to reinforce them. Writing each character a few times helps distinguish similar shapes.
U!: I've put Italian on hold to switch to Japanese, since we're planning a trip to Osaka next spring. Should I learn kanji right away too?
A: Start with a small set of very common kanji once you can read hiragana and katakana comfortably, ideally learned in the context of words rather than alone. For a trip, focus first on survival phrases, numbers, reading signs and menus, and polite expressions. A beginner textbook or course will introduce kanji gradually alongside grammar.
"""),
        ],
    ),
]


# ---------------------------------------------------------------------------
# Building the haystacks.
# ---------------------------------------------------------------------------

_ID_OK = re.compile(r"^[A-Za-z0-9._:/-]+$")


def evidence_id(spec: Spec, index: int, ev: Evidence) -> str:
    """``s-007a-cooking``: the question's number, a letter per evidence session, the topic."""
    number = spec.qid.split("-")[1][:3]
    return f"s-{number}{chr(ord('a') + index)}-{ev.topic}"


def _random_time(rng: random.Random, first: date, last: date) -> datetime:
    day = first + timedelta(days=rng.randrange((last - first).days + 1))
    minute = rng.randrange(7 * 60, 24 * 60)
    return datetime(day.year, day.month, day.day, minute // 60, minute % 60)


def build_record(spec: Spec, fillers: list[Filler], seed: int) -> dict[str, Any]:
    """One LongMemEval record: the evidence plus a seeded random subset of the pool."""
    rng = random.Random(f"{seed}:{spec.qid}")
    asked = parse_when(spec.asked)
    first = datetime.strptime(spec.start, "%Y/%m/%d").date()
    last = (asked - timedelta(days=1)).date()
    sessions: list[tuple[datetime, str, list[Message]]] = []
    for i, ev in enumerate(spec.evidence):
        sessions.append((parse_when(ev.when), evidence_id(spec, i, ev), parse_messages(ev.text)))
    pool = [f for f in fillers if not f.tags & spec.avoid]
    size = rng.randint(HAYSTACK_MIN, HAYSTACK_MAX)
    taken = {d for d, _, _ in sessions}
    for f in rng.sample(pool, size - len(sessions)):
        when = _random_time(rng, first, last)
        while when in taken:
            when = _random_time(rng, first, last)
        taken.add(when)
        sessions.append((when, f.session_id, [dict(m) for m in f.messages]))
    sessions.sort(key=lambda s: s[0])
    return {
        "question_id": spec.qid,
        "question_type": spec.qtype,
        "question": spec.question,
        "answer": spec.answer,
        "question_date": fmt_date(asked),
        "haystack_session_ids": [sid for _, sid, _ in sessions],
        "haystack_dates": [fmt_date(d) for d, _, _ in sessions],
        "haystack_sessions": [msgs for _, _, msgs in sessions],
        "answer_session_ids": [evidence_id(spec, i, ev) for i, ev in enumerate(spec.evidence)],
    }


def validate(records: list[dict[str, Any]]) -> None:
    """Raise ValueError on anything the LongMemEval schema or this set's design forbids."""
    seen: set[str] = set()
    for rec in records:
        qid = rec["question_id"]
        if qid in seen:
            raise ValueError(f"{qid}: duplicate question id")
        seen.add(qid)
        if rec["question_type"] not in QUESTION_TYPES:
            raise ValueError(f"{qid}: unknown question type {rec['question_type']!r}")
        ids, dates = rec["haystack_session_ids"], rec["haystack_dates"]
        if not len(ids) == len(dates) == len(rec["haystack_sessions"]):
            raise ValueError(f"{qid}: haystack lists differ in length")
        if len(set(ids)) != len(ids) or not all(_ID_OK.match(i) for i in ids):
            raise ValueError(f"{qid}: duplicate or malformed session ids")
        parsed = [datetime.strptime(d[:10] + d[16:], "%Y/%m/%d %H:%M") for d in dates]
        if parsed != sorted(parsed):
            raise ValueError(f"{qid}: haystack is not in date order")
        if parsed[-1] >= datetime.strptime(rec["question_date"][:10] + rec["question_date"][16:],
                                           "%Y/%m/%d %H:%M"):
            raise ValueError(f"{qid}: a session is dated after the question")
        if not set(rec["answer_session_ids"]) <= set(ids):
            raise ValueError(f"{qid}: answer sessions missing from the haystack")
        for sid, msgs in zip(ids, rec["haystack_sessions"], strict=True):
            holds = any(m.get("has_answer") for m in msgs)
            if holds != (sid in rec["answer_session_ids"]):
                raise ValueError(f"{qid}: has_answer marks disagree with answer_session_ids "
                                 f"in {sid}")
            if any(m["role"] not in ("user", "assistant") or not m["content"] for m in msgs):
                raise ValueError(f"{qid}: bad message in {sid}")
    for qtype in QUESTION_TYPES:
        n = sum(1 for r in records if r["question_type"] == qtype)
        if n != 6:
            raise ValueError(f"{qtype}: {n} questions, expected 6")


def build(seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """All records, in question-id order."""
    fillers = FILLERS
    if len({f.session_id for f in fillers}) != len(fillers):
        raise ValueError("duplicate filler session ids")
    records = [build_record(spec, fillers, seed) for spec in sorted(SPECS, key=lambda s: s.qid)]
    validate(records)
    return records


def dumps(records: list[dict[str, Any]]) -> str:
    """Compact JSON, one question record per line."""
    return "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    records = build(args.seed)
    text = dumps(records)
    args.output.write_text(text, encoding="utf-8")
    sessions = sum(len(r["haystack_session_ids"]) for r in records)
    print(f"wrote {args.output}: {len(records)} questions, {sessions} sessions "
          f"({len(FILLERS)} distinct fillers), {len(text.encode()) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
