"""The per-answer time budget and circuit breaker (memstrata.llm.budget), unit by unit."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

from memstrata.controller.config import ControllerSettings
from memstrata.controller.run import Controller
from memstrata.llm import budget
from memstrata.llm.budget import AnswerBudget, within
from memstrata.llm.retry import call_with_retries


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_runs_out_and_then_refuses_every_call() -> None:
    clock = Clock()
    b = AnswerBudget(5.0, clock=clock)
    assert b.remaining() == 5.0 and not b.expired
    assert b.clip(30.0) == 5.0 and b.clip(2.0) == 2.0
    assert b.refusal("http://x|m") is None
    clock.now += 5.0
    assert b.expired and b.remaining() == 0.0
    reason, why = b.refusal("http://x|m") or ("", "")
    assert reason == "budget" and "5 s" in why


def test_a_circuit_that_timed_out_is_skipped_but_not_the_others() -> None:
    b = AnswerBudget(None, skip_after=2)
    assert b.remaining() is None and b.clip(7.0) == 7.0 and not b.expired
    b.timed_out("a|m")
    assert b.refusal("a|m") is None  # once is not yet "keeps timing out" with skip_after=2
    b.timed_out("a|m")
    refused = b.refusal("a|m")
    assert refused is not None and refused[0] == "unavailable"
    assert b.refusal("b|m") is None and b.refusal("a|other-model") is None
    with pytest.raises(ValueError, match="skip_after"):
        AnswerBudget(1.0, skip_after=0)


def test_the_ledger_hands_each_build_and_read_over_once() -> None:
    b = AnswerBudget(None)
    b.book_builder("m", 10, 2, 5.0)
    b.layer_read("s1", "L1", "built")
    b.layer_read("s2", "L1", "cache")
    builds, reads = b.take()
    assert [x.prompt_tokens for x in builds] == [10]
    assert [(r.session_id, r.cached) for r in reads] == [("s1", False), ("s2", True)]
    assert b.take() == ([], [])


def test_the_current_budget_is_scoped_to_the_block() -> None:
    assert budget.current() is None
    with within(AnswerBudget(1.0)) as b:
        assert budget.current() is b
    assert budget.current() is None


def _timeout() -> openai.APITimeoutError:
    return openai.APITimeoutError(request=httpx.Request("POST", "http://127.0.0.1/v1"))


def test_no_retry_starts_when_its_wait_would_pass_the_deadline() -> None:
    calls: list[int] = []
    slept: list[float] = []

    def fail() -> None:
        calls.append(1)
        raise _timeout()

    with pytest.raises(openai.APITimeoutError):
        call_with_retries(fail, retries=3, base_s=0.5, sleep=slept.append,
                          remaining=lambda: 0.1)
    assert len(calls) == 1 and slept == []
    calls.clear()
    with pytest.raises(openai.APITimeoutError):
        call_with_retries(fail, retries=3, base_s=0.5, sleep=slept.append,
                          remaining=lambda: 100.0)
    assert len(calls) == 4 and len(slept) == 3


def test_the_llm_path_keeps_a_reserve_and_the_callers_deadline_wins() -> None:
    c = Controller(object(), ControllerSettings(answer_budget_s=10.0))  # type: ignore[arg-type]
    b, total = c._budget(None)
    assert total == 10.0 and b.seconds == pytest.approx(7.5)  # a quarter kept for offline
    b, total = c._budget(time.monotonic() + 3.0)
    assert total == pytest.approx(2.8, abs=0.05)  # the deadline less the reply margin
    assert b.seconds == pytest.approx(total - 1.0, abs=0.05)  # at least 1 s kept
    big = Controller(object(), ControllerSettings(answer_budget_s=600.0))  # type: ignore[arg-type]
    b, total = big._budget(None)
    assert b.seconds == pytest.approx(590.0)  # the reserve is at most 10 s
