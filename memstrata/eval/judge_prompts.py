"""The judge's grading rule for each LongMemEval question type, written in our own words.

LongMemEval grades every response with a yes/no judgement whose rule depends
on the question type. The seven types and what each rule allows:

* ``single-session-user``: a fact the user stated; any wording of the same value.
* ``single-session-assistant``: what the assistant said; the same item, not a vaguer one.
* ``single-session-preference``: the gold answer is a rubric for a personalised reply.
* ``multi-session``: a count, total or list gathered across sessions; the result must match.
* ``temporal-reasoning``: dates and durations; an off-by-one in days/weeks/months is let pass.
* ``knowledge-update``: the latest value counts, even if older ones are mentioned too.
* ``abstention``: the question has no answer in the history; saying so is right.

``default`` applies to anything else (LoCoMo's single-hop and open-domain
questions). LoCoMo categories are mapped onto these types by
:func:`memstrata.eval.judge.judge_type`.
"""

from __future__ import annotations

JUDGE_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
    "abstention",
    "default",
)

RULES: dict[str, str] = {
    "default": (
        "Say yes if the response contains the correct answer or something equivalent to it, "
        "including when it shows its steps and arrives at that answer. Say no if it gives a "
        "different answer or only part of what the correct answer requires."
    ),
    "single-session-user": (
        "The question asks about something the user said about themselves in an earlier "
        "conversation. Say yes if the response states the correct answer in any wording "
        "(a synonym, a more precise form of the same thing, extra context around it). Say no "
        "if it names a different value, leaves the value out, or lists several candidates "
        "without settling on the correct one."
    ),
    "single-session-assistant": (
        "The question asks what the assistant itself said, suggested or recommended in an "
        "earlier conversation. Say yes if the response names the same item the correct "
        "answer names, in any wording. Say no if it names something else, or only a vague "
        "description that would fit other items as well."
    ),
    "single-session-preference": (
        "The gold answer is a rubric describing a good personalised response. Say yes if "
        "the response uses the user's personal information the way the rubric asks; it "
        "need not mention every point. Otherwise say no."
    ),
    "multi-session": (
        "The answer has to be gathered from several conversations: a count, a total, a "
        "list or a comparison. Say yes only if the response's final result is the correct "
        "one (the same number, or a list with the same members); how it got there does not "
        "matter. Say no for a different number, a list that misses or adds members, or no "
        "final result."
    ),
    "temporal-reasoning": (
        "Say yes if the response contains the correct answer or an equivalent. Do not count "
        "off-by-one differences in numbers of days, weeks or months against it (a response "
        "of 19 days for a correct answer of 18 is acceptable). Otherwise say no."
    ),
    "knowledge-update": (
        "The correct answer is the user's latest information. Say yes if the response gives "
        "that latest answer, even if it also mentions what was true before. Say no if it "
        "gives only an outdated value or something else."
    ),
    "abstention": (
        "This question cannot be answered from the user's history. Say yes if the response "
        "says so (that the information is missing, not mentioned or unknown). Say no if it "
        "gives a concrete answer."
    ),
}

SYSTEM = "You grade answers to questions about a user's conversation history."
ASK = "Is the response correct? Reply with yes or no only."


def judge_messages(question: str, gold: str, response: str, kind: str) -> list[dict[str, str]]:
    """The chat messages that ask the judge about one response under ``kind``'s rule."""
    if kind not in RULES:
        raise ValueError(f"judge type: {kind!r} is not one of {', '.join(JUDGE_TYPES)}")
    if kind == "abstention":
        label = "Explanation"
    elif kind == "single-session-preference":
        label = "Rubric"
    else:
        label = "Correct answer"
    user = "\n".join([
        RULES[kind],
        "",
        f"Question: {question}",
        f"{label}: {gold}",
        f"Response: {response}",
        "",
        ASK,
    ])
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
