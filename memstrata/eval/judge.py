"""An LLM judge that says yes or no to an answer, by question type (LongMemEval's protocol).

LongMemEval grades with a model that compares the response with the gold
answer using a rule that depends on the question type: some latitude for
counting days in temporal questions, credit for the updated value in
knowledge-update questions, a rubric for preference questions, and credit
for saying "I don't know" on unanswerable ones. The instructions here are
written in our own words; LoCoMo categories are mapped onto the same types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memstrata.llm.openai_compat import ChatClient

_YES = re.compile(r"^\W*(yes|correct|true)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|incorrect|false|wrong)\b", re.IGNORECASE)

_RULES = {
    "default": (
        "Say yes if the response contains the correct answer or something equivalent to it, "
        "including when it shows its steps and arrives at that answer. Say no if it gives a "
        "different answer or only part of what the correct answer requires."
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
    "single-session-preference": (
        "The gold answer is a rubric describing a good personalised response. Say yes if "
        "the response uses the user's personal information the way the rubric asks; it "
        "need not mention every point. Otherwise say no."
    ),
    "abstention": (
        "This question cannot be answered from the user's history. Say yes if the response "
        "says so (that the information is missing, not mentioned or unknown). Say no if it "
        "gives a concrete answer."
    ),
}
_TYPE_OF = {
    "temporal-reasoning": "temporal-reasoning",
    "temporal": "temporal-reasoning",
    "knowledge-update": "knowledge-update",
    "single-session-preference": "single-session-preference",
    "adversarial": "abstention",
}


def judge_type(category: str, adversarial: bool = False) -> str:
    """Which grading rule applies to a LongMemEval question type or LoCoMo category."""
    return "abstention" if adversarial else _TYPE_OF.get(category, "default")


def judge_messages(question: str, gold: str, response: str, kind: str) -> list[dict[str, str]]:
    label = "Rubric" if kind == "single-session-preference" else "Correct answer"
    user = "\n".join([
        _RULES[kind],
        "",
        f"Question: {question}",
        f"{label}: {gold}" if kind != "abstention" else f"Explanation: {gold}",
        f"Response: {response}",
        "",
        "Is the response correct? Reply with yes or no only.",
    ])
    return [{"role": "system", "content": "You grade answers to questions about a user's "
                                          "conversation history."},
            {"role": "user", "content": user}]


@dataclass(frozen=True)
class Verdict:
    correct: bool
    raw: str
    tokens_in: int
    tokens_out: int


def parse_verdict(text: str) -> bool:
    """Yes/no from the reply's first word; anything unclear counts as no."""
    if _YES.search(text):
        return True
    if _NO.search(text):
        return False
    return bool(re.search(r"\byes\b", text, re.IGNORECASE)) and not re.search(
        r"\bno\b", text, re.IGNORECASE)


def judge(client: "ChatClient", question: str, gold: str, response: str, category: str,
          adversarial: bool = False) -> Verdict:
    """Grade one response with the judge role's model."""
    kind = judge_type(category, adversarial)
    reply = client.chat("judge", judge_messages(question, gold, response, kind))
    text = (reply.message.content or "").strip()
    return Verdict(parse_verdict(text), text, reply.prompt_tokens, reply.completion_tokens)
