"""Benchmark questions with their gold evidence, for retrieval and QA evaluation.

The conversations themselves are read by :mod:`memstrata.ingest.formats`
(the same code path as ``memstrata ingest``); this module reads the questions
and maps their gold evidence onto the session ids that ingestion produces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memstrata.ingest.formats import FormatError, Parsed, read_file
from memstrata.model import Scope, parse_dia_id
from memstrata.text.dates import parse_datetime

_ID_SPLIT = re.compile(r"[;,\s]+")
DatasetFormat = Literal["locomo", "longmemeval"]

#: LoCoMo category numbers and what they ask for.
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                     5: "adversarial"}


@dataclass(frozen=True)
class Question:
    """One benchmark question, scoped to the user whose memory answers it."""

    qid: str
    scope: Scope
    question: str
    answer: str
    #: LoCoMo category name or LongMemEval question_type.
    category: str
    asked_on: datetime | None
    gold_sessions: frozenset[str]
    #: LoCoMo dia_ids (``D3:7``); empty for LongMemEval.
    gold_evidence: frozenset[str] = field(default_factory=frozenset)
    #: LoCoMo category 5 questions have no answer in the conversation.
    adversarial: bool = False


@dataclass
class Dataset:
    """Conversations (as ingestible sessions) plus their questions."""

    format: DatasetFormat
    parsed: Parsed
    questions: list[Question]

    @property
    def users(self) -> list[Scope]:
        return sorted({s.scope for s in self.parsed.sessions}, key=str)


def load_dataset(path: Path, fmt: DatasetFormat, tenant_id: str = "eval") -> Dataset:
    """Read conversations and questions from one LoCoMo or LongMemEval file."""
    parsed = read_file(path, fmt, tenant_id=tenant_id)
    with path.open("r", encoding="utf-8") as fh:
        data = json.load(fh)
    reader = _locomo_questions if fmt == "locomo" else _longmemeval_questions
    questions = list(reader(data, tenant_id, parsed))
    if not questions:
        raise FormatError(f"{path}: no questions found for format {fmt}")
    return Dataset(format=fmt, parsed=parsed, questions=questions)


def _locomo_questions(data: list[Any], tenant_id: str, parsed: Parsed) -> Iterator[Question]:
    last_date: dict[str, datetime | None] = {}
    for s in parsed.sessions:
        d = s.meta.session_date
        prev = last_date.get(s.scope.user_id)
        if d is not None and (prev is None or d > prev):
            last_date[s.scope.user_id] = d
    for rec in data:
        user = rec.get("sample_id")
        if not isinstance(user, str):
            continue
        scope = Scope(tenant_id=tenant_id, user_id=user)
        for i, qa in enumerate(rec.get("qa", [])):
            cat = int(qa.get("category", 0))
            # A few LoCoMo entries pack several ids into one string ("D8:6; D9:17").
            evidence = [p for e in qa.get("evidence", []) if isinstance(e, str)
                        for p in _ID_SPLIT.split(e) if parse_dia_id(p)]
            sessions = {f"session_{p[0]}" for e in evidence if (p := parse_dia_id(e))}
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            yield Question(
                qid=f"{user}#{i}",
                scope=scope,
                question=str(qa.get("question", "")),
                answer=str(answer),
                category=LOCOMO_CATEGORIES.get(cat, str(cat)),
                # LoCoMo questions carry no date: they are asked after the last session.
                asked_on=last_date.get(user),
                gold_sessions=frozenset(sessions),
                gold_evidence=frozenset(evidence),
                adversarial=cat == 5,
            )


def _longmemeval_questions(
    data: list[Any], tenant_id: str, parsed: Parsed
) -> Iterator[Question]:
    for rec in data:
        qid = rec.get("question_id")
        if not isinstance(qid, str):
            continue
        raw_date = rec.get("question_date")
        yield Question(
            qid=qid,
            scope=Scope(tenant_id=tenant_id, user_id=qid),
            question=str(rec.get("question", "")),
            answer=str(rec.get("answer", "")),
            category=str(rec.get("question_type", "unknown")),
            asked_on=parse_datetime(raw_date) if isinstance(raw_date, str) else None,
            gold_sessions=frozenset(rec.get("answer_session_ids", [])),
            adversarial=qid.endswith("_abs"),
        )
