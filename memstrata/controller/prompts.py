"""Prompts of the LLM-driven controller and of its reflection tool (own words).

They follow the structure of APDMem's controller and reflection prompts
(figures 7 and 8): what the memory levels are, a strategy that reads coarse
levels first, and a reflection that checks sufficiency and proposes new
queries. The budgets shown to the model are the configured ones.
"""

from __future__ import annotations

import json
from datetime import datetime

from memstrata.controller.config import ControllerSettings


def _when(asked_on: datetime | None) -> str:
    return asked_on.strftime("%Y-%m-%d (%A)") if asked_on else "unknown"


def controller_system(settings: ControllerSettings, tools: list[str]) -> str:
    levels = []
    if "read_profile" in tools:
        levels.append("Profiles (read_profile): who is who across all sessions (the user, "
                      "the assistant, each person, pet or place) with their attributes, "
                      "preferences and who recommended or looks after what, each bullet with "
                      "its source turns. Read it first when the question is about a person, "
                      "a relation (\"my sister\") or an attribute (job, age, home, diet, "
                      "likes); an answer about someone must come from that someone's bullets.")
    levels.append("Level 0: one-line summaries of each turn with keywords (what search looks at).")
    if "read_facts" in tools:
        levels.append("Level 1: key facts of a session (read_facts): cheap, usually enough.")
    if "read_turns" in tools:
        levels.append("Level 2: notes for every turn of a session, in order (read_turns).")
    if "read_raw" in tools:
        levels.append("Level 3: the verbatim messages of the most relevant turns (read_raw): "
                      "the most faithful and the most expensive.")
    plan = []
    if "interpret_dates" in tools:
        plan.append("When the question uses relative time (\"last spring\", \"two weeks "
                    "ago\"), call interpret_dates before anything else.")
    if "decompose" in tools:
        plan.append("When the question combines several asks or needs facts from several "
                    "places, call decompose and search for each part.")
    plan.append("Call search with 3-5 queries that use different words. Search also shows "
                "the key facts of its best unexplored sessions.")
    plan.append("Read the coarsest level that can answer; go one level finer only when the "
                "coarser one lacks the exact detail (a name, number, date or wording).")
    plan.append("For questions that count or list, read widely across sessions, merge "
                "duplicates, and prefer recent sessions when things changed.")
    if "reflect" in tools:
        plan.append("Before answering, call reflect to check for gaps; never answer a "
                    "counting or list question without reflecting at least once.")
    plan.append("When you have enough, reply with a short draft answer and no tool call.")
    return "\n".join([
        "You are the retrieval agent of a personal memory. The user talked with an AI "
        "assistant many times; those conversations are stored at several levels of detail:",
        *[f"- {x}" for x in levels],
        "",
        "How to work:",
        *[f"{i}. {x}" for i, x in enumerate(plan, 1)],
        "",
        f"Limits: {settings.max_steps} steps, {settings.max_drilled_sessions} sessions read, "
        f"{settings.max_raw_turns} raw turns, {settings.max_reflections} reflections.",
    ])


def controller_user(question: str, asked_on: datetime | None) -> str:
    return f"Question (asked on {_when(asked_on)}): {question}"


NUDGE = ("You found new evidence since your last reflection. Call reflect to check whether "
         "anything is still missing before you answer.")

FINAL = {
    "converged": "Reflection found nothing new. Give your draft answer now from the evidence "
                 "gathered, as a short phrase, without calling tools.",
    "sufficient": "Reflection judged the evidence sufficient. Give your draft answer now, as a "
                  "short phrase, without calling tools.",
    "budget": "The step budget is used up. Give your best draft answer now from the evidence "
              "gathered, as a short phrase, without calling tools.",
}

REFLECT_SYSTEM = (
    "You check the work of a memory retrieval agent whose search combines keyword matching "
    "(with stemming) and embedding similarity. You reply with one JSON object."
)
REFLECT_SHAPE = ('{"is_sufficient": true|false, "items_found_so_far": ["..."], '
                 '"potential_gaps": "...", "new_queries": ["..."]}')


def reflect_messages(question: str, asked_on: datetime | None, searched: list[str],
                     drilled: list[str], queries: list[str], evidence: str,
                     ) -> list[dict[str, str]]:
    user = "\n".join([
        f"Question (asked on {_when(asked_on)}): {question}",
        f"Sessions returned by search so far: {', '.join(searched) or 'none'}",
        f"Sessions read in detail: {', '.join(drilled) or 'none'}",
        f"Queries already tried: {json.dumps(queries, ensure_ascii=False)}",
        "",
        "Evidence gathered:",
        evidence or "(none)",
        "",
        "Do this:",
        "1. Decide whether the evidence is enough for a complete answer.",
        "2. If the same sessions keep coming back and nothing new appears, call it enough.",
        "3. Pull names, places and other entities out of the evidence as possible new search "
        "terms.",
        "4. If it is not enough, propose 1-5 new queries of 3-8 words whose wording differs "
        "from every query already tried.",
        f"Reply with JSON shaped as {REFLECT_SHAPE}",
    ])
    return [{"role": "system", "content": REFLECT_SYSTEM}, {"role": "user", "content": user}]
