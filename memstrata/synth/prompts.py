"""Prompts for the organized-notes step and the answer step (APDMem §3.3, own words).

The notes prompt asks the synthesizer model to arrange the evidence (never to
answer); the answer prompt gives the generator the notes and the controller's
draft and asks it to check the draft rather than trust it, answering in a
short phrase as JSON.
"""

from __future__ import annotations

from datetime import datetime


def when(asked_on: datetime | None) -> str:
    return asked_on.strftime("%Y-%m-%d (%A)") if asked_on else "an unknown date"


NOTES_SYSTEM = (
    "You prepare evidence for someone who will answer a question about a user's past "
    "conversations with an assistant. You arrange the evidence; you do not answer."
)


def notes_messages(question: str, asked_on: datetime | None, evidence: str,
                   draft: str | None) -> list[dict[str, str]]:
    draft_part = (f"\n\n## Preliminary answer from the retrieval agent\n{draft}\n"
                  "Check it against the evidence; note anything that confirms or contradicts it."
                  if draft else "")
    user = "\n".join([
        f"## Question (asked on {when(asked_on)})",
        question,
        "",
        "## Evidence read from memory",
        evidence or "(nothing was found)",
        draft_part,
        "",
        "## Write these sections",
        "1. RELEVANT FACTS: every fact in the evidence that bears on the question, most "
        "relevant first, each with its session id and session date.",
        "2. TIMELINE: when dates matter, the relevant facts in date order; mark the most "
        "recent one and say so if the question asks about the present state.",
        "3. CHANGES AND CONFLICTS: where sessions disagree on the same thing, list every "
        "version with its date; the latest one is the current truth.",
        "4. ENUMERATION: for questions that count or list, every qualifying item once "
        "(merge duplicates across sessions), flagging any you are unsure of.",
        "5. ANSWER HINT: what the evidence points to, as a hint rather than a final answer.",
        "",
        "Keep every specific detail (names, numbers, dates, titles, places). For counting "
        "questions be exhaustive.",
    ])
    return [{"role": "system", "content": NOTES_SYSTEM}, {"role": "user", "content": user}]


ANSWER_SYSTEM = (
    "You answer questions about a user's past conversations using only the context given. "
    "You always reply with a single JSON object."
)
ANSWER_SHAPE = '{"reasoning": "<brief reasoning>", "answer": "<short phrase>"}'


def answer_messages(question: str, asked_on: datetime | None, context: str,
                    draft: str | None) -> list[dict[str, str]]:
    draft_part = (f"\n\nPreliminary answer from the retrieval agent (verify it, do not just "
                  f"copy it): {draft}" if draft else "")
    user = "\n".join([
        f"Question (asked on {when(asked_on)}): {question}",
        "",
        "Context:",
        context or "(no context was found)",
        draft_part,
        "",
        "Rules:",
        "- Reason briefly first, then answer.",
        "- Answer in a short phrase that still names the specific people, things, titles, "
        "dates or numbers asked for.",
        "- Use only the context. Read all of it yourself rather than relying on the "
        "preliminary answer.",
        "- If the context does not contain the answer, say that it is not mentioned in the "
        "conversation.",
        "- Resolve relative dates against the session dates shown.",
        f"- Reply with JSON shaped as {ANSWER_SHAPE}",
    ])
    return [{"role": "system", "content": ANSWER_SYSTEM}, {"role": "user", "content": user}]
