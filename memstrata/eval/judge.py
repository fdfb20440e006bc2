"""An LLM judge that says yes or no to an answer, by question type (LongMemEval's protocol).

LongMemEval grades with a model that compares the response with the gold
answer using a rule that depends on the question type: some latitude for
counting days in temporal questions, credit for the updated value in
knowledge-update questions, a rubric for preference questions, and credit
for saying "I don't know" on unanswerable ones. The rules, one per question
type, are in :mod:`memstrata.eval.judge_prompts` (our own words); LoCoMo
categories are mapped onto the same types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstrata.eval.judge_prompts import JUDGE_TYPES, judge_messages

if TYPE_CHECKING:
    from memstrata.llm.openai_compat import ChatClient

_YES = re.compile(r"^\W*(yes|correct|true)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|incorrect|false|wrong)\b", re.IGNORECASE)

_TYPE_OF = {
    **{t: t for t in JUDGE_TYPES},
    # LoCoMo categories
    "temporal": "temporal-reasoning",
    "multi-hop": "multi-session",
    "adversarial": "abstention",
}


def judge_type(category: str, adversarial: bool = False) -> str:
    """Which grading rule applies to a LongMemEval question type or LoCoMo category."""
    return "abstention" if adversarial else _TYPE_OF.get(category, "default")


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
