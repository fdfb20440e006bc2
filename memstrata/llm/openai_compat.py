"""An OpenAI-compatible chat client, and the layer builder that uses it.

:class:`ChatClient` is the one place memstrata talks to a chat-completions
endpoint (OpenAI itself, Azure-style gateways, vLLM, Ollama, LiteLLM...): it
picks the model for each role, applies the retry policy of
:mod:`memstrata.llm.retry`, books tokens on a :class:`UsageMeter` and turns
failures into :class:`LLMError`. :class:`OpenAIBuilder` builds L0, L1 and L2
with it and checks everything the model returns before it is stored.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessage

from memstrata.config import Settings
from memstrata.llm import budget as answer_budget
from memstrata.llm import prompts
from memstrata.llm.retry import call_with_retries, describe_error, failure_reason
from memstrata.llm.types import LayerBuilder, LLMError, TurnSummary, Window
from memstrata.llm.usage import Role, UsageMeter
from memstrata.model import KeyFact, Message, SessionMeta, Turn, TurnNote

log = logging.getLogger(__name__)

_JSON_MODE = {"type": "json_object"}
MAX_KEYWORDS = 8
MAX_TAGS = 5
_MAX_LABEL_CHARS = 80


@dataclass(frozen=True)
class ChatReply:
    """One completion: the assistant message (text and/or tool calls) and its cost."""

    message: ChatCompletionMessage
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


class ChatClient:
    """Chat completions with per-role models, retries and usage accounting.

    The judge role has no setting of its own; it uses the generator model
    unless ``models`` says otherwise.
    """

    def __init__(
        self,
        settings: Settings,
        meter: UsageMeter | None = None,
        *,
        models: Mapping[Role, str] | None = None,
        json_retries: int = 1,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        # Local servers usually need no key, but the SDK insists on one.
        self._client = openai.OpenAI(base_url=settings.llm_base_url, api_key=key or "unused",
                                     timeout=settings.llm_timeout_s, max_retries=0)
        roles: tuple[Role, ...] = ("builder", "controller", "synthesizer", "generator", "judge")
        #: Seconds per attempt and ``max_tokens`` per role (MEMSTRATA_LLM_TIMEOUT_<ROLE>_S,
        #: MEMSTRATA_LLM_MAX_TOKENS_<ROLE>).
        self._timeouts: dict[Role, float] = {r: settings.llm_timeout_for(r) for r in roles}
        self._max_tokens: dict[Role, int] = {r: settings.llm_max_tokens_for(r) for r in roles}
        self._breaker = Breaker(settings.llm_breaker_failures, settings.llm_breaker_cooldown_s)
        self._models: dict[Role, str] = {
            "builder": settings.llm_model_builder,
            "controller": settings.llm_model_controller,
            "synthesizer": settings.llm_model_synthesizer,
            "generator": settings.llm_model_generator,
            "judge": settings.llm_model_generator,
        }
        self._models.update(models or {})
        self._temperature = settings.llm_temperature
        self._retries = settings.llm_max_retries
        self._json_retries = max(0, json_retries)
        self._backoff = (backoff_base_s, backoff_max_s)
        self._sleep = sleep
        #: Cleared when the server turns ``response_format`` down; text extraction takes over.
        self._json_mode = True
        self.meter = meter if meter is not None else UsageMeter()

    def model_for(self, role: Role) -> str:
        return self._models[role]

    def limits_for(self, role: Role) -> tuple[float, int]:
        """(seconds per attempt, max_tokens) for ``role``."""
        return self._timeouts[role], self._max_tokens[role]

    def chat(
        self,
        role: Role,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
    ) -> ChatReply:
        """One completion, tools optional (OpenAI function calling)."""
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = list(tools)
        if tool_choice is not None:
            extra["tool_choice"] = tool_choice
        return self._complete(role, messages, extra)

    def complete_json(
        self,
        role: Role,
        messages: Sequence[Mapping[str, Any]],
        schema_hint: str | None = None,
    ) -> dict[str, Any]:
        """A completion parsed as one JSON object.

        JSON mode is requested; servers that ignore it are handled by pulling
        the first JSON object out of the text. An unparseable reply is asked
        for again ``json_retries`` times before :class:`LLMError` is raised.
        """
        msgs = _with_json_instruction(messages, schema_hint)
        text = ""
        attempts = 0
        for _ in range(1 + self._json_retries):
            attempts += 1
            reply = self._complete_json_once(role, msgs)
            text = reply.message.content or ""
            found = extract_json_object(text)
            if found is not None:
                return found
            if reply.finish_reason == "length":
                # Cut off at max_tokens: the same prompt would be cut off again.
                raise LLMError(
                    f"{role} model {self.model_for(role)!r} reached max_tokens "
                    f"({self._max_tokens[role]}, MEMSTRATA_LLM_MAX_TOKENS_{_env_role(role)}) "
                    f"before its JSON reply was complete", reason="truncated", role=role)
        raise LLMError(f"{role} model {self.model_for(role)!r} did not return a valid JSON "
                       f"object after {attempts} attempt(s); last reply began "
                       f"{text[:200]!r}", reason="unparsable", role=role)

    # -- internals ---------------------------------------------------------

    def _complete_json_once(self, role: Role, msgs: list[dict[str, Any]]) -> ChatReply:
        if self._json_mode:
            try:
                return self._complete(role, msgs, {"response_format": _JSON_MODE})
            except LLMError as exc:
                cause = exc.__cause__
                if not (isinstance(cause, openai.BadRequestError)
                        and "response_format" in str(cause.message).lower()):
                    raise
                log.warning("%s endpoint rejected response_format; parsing JSON from text", role)
                self._json_mode = False
        return self._complete(role, msgs, {})

    def _complete(self, role: Role, messages: Sequence[Mapping[str, Any]],
                  extra: dict[str, Any]) -> ChatReply:
        model = self.model_for(role)
        base_s, max_s = self._backoff
        kwargs: dict[str, Any] = {"retries": self._retries, "base_s": base_s, "max_s": max_s}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        timeout, max_tokens = self.limits_for(role)
        # The answer this call is part of, if any: its deadline and its own breaker.
        answer = answer_budget.current()
        circuit = f"{self._client.base_url}|{model}"
        refused = answer.refusal(circuit) if answer is not None else None
        if refused is not None:
            raise LLMError(f"{role} call to model {model!r} skipped: {refused[1]}",
                           reason=refused[0], role=role)
        if not self._breaker.allow():
            raise LLMError(f"{role} call to model {model!r} skipped: the endpoint failed "
                           f"{self._breaker.threshold} calls in a row; trying it again in "
                           f"{self._breaker.wait_s():.0f} s", reason="unavailable", role=role)
        if answer is not None:
            kwargs["remaining"] = answer.remaining

        def call() -> Any:
            limit = answer.clip(timeout) if answer is not None else timeout
            if limit <= 0:  # spent while this call waited to retry
                raise LLMError(f"{role} call to model {model!r} stopped: the answer's time "
                               f"budget ran out", reason="budget", role=role)
            return self._client.chat.completions.create(
                model=model, messages=list(messages),  # type: ignore[arg-type]
                temperature=self._temperature, max_tokens=max_tokens, timeout=limit, **extra)

        t0 = time.perf_counter()
        try:
            response = call_with_retries(call, **kwargs)
        except openai.OpenAIError as exc:
            reason = failure_reason(exc)
            if reason == "timeout" and answer is not None:
                answer.timed_out(circuit)
                if answer.expired:  # cut short by the answer's budget, not the role's limit
                    raise LLMError(
                        f"{role} call to model {model!r} stopped: the answer's time budget "
                        f"({answer.seconds:g} s) ran out", reason="budget", role=role) from exc
            if reason in ("timeout", "connection") or (
                    isinstance(exc, openai.APIStatusError) and exc.status_code >= 500):
                self._breaker.failed()
            raise LLMError(f"{role} call to model {model!r} failed: {describe_error(exc)}",
                           reason=reason, role=role) from exc
        ms = (time.perf_counter() - t0) * 1000
        self._breaker.succeeded()
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        self.meter.record(role, prompt_tokens, completion_tokens, model)
        if answer is not None and role == "builder":  # construction caused by this answer
            answer.book_builder(model, prompt_tokens, completion_tokens, ms)
        if not response.choices:
            raise LLMError(f"{role} model {model!r} returned no choices", reason="unparsable",
                           role=role)
        choice = response.choices[0]
        return ChatReply(message=choice.message, model=model, prompt_tokens=prompt_tokens,
                         completion_tokens=completion_tokens, finish_reason=choice.finish_reason)


def _env_role(role: Role) -> str:
    return ("generator" if role == "judge" else role).upper()


class Breaker:
    """Stops calling an endpoint that keeps failing, for a while.

    After ``threshold`` failed calls in a row (timeouts, refused connections,
    5xx after their retries) every call fails at once for ``cooldown_s``; then
    one call at a time is let through, and the first success closes it again.
    Without it a dead endpoint costs every window of an ingest its full
    timeout and retries before the fallback answers.
    """

    def __init__(self, threshold: int, cooldown_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._open_until = 0.0

    def allow(self) -> bool:
        if self.threshold <= 0:
            return True
        with self._lock:
            if self._failures < self.threshold:
                return True
            now = self._clock()
            if now < self._open_until:
                return False
            self._open_until = now + self.cooldown_s  # this call is the probe
            return True

    def wait_s(self) -> float:
        with self._lock:
            return max(0.0, self._open_until - self._clock())

    def failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._failures >= self.threshold:
                self._open_until = self._clock() + self.cooldown_s

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0
            self._open_until = 0.0


def _with_json_instruction(messages: Sequence[Mapping[str, Any]],
                           schema_hint: str | None) -> list[dict[str, Any]]:
    """Make sure the prompt asks for JSON (OpenAI's JSON mode refuses prompts that do not)."""
    msgs = [dict(m) for m in messages]
    if schema_hint:
        line = f"Reply with one JSON object shaped as: {schema_hint}"
    elif any("json" in str(m.get("content") or "").lower() for m in msgs):
        return msgs
    else:
        line = "Reply with one JSON object."
    if msgs and msgs[0].get("role") == "system" and isinstance(msgs[0].get("content"), str):
        msgs[0]["content"] = f"{msgs[0]['content']}\n\n{line}"
    else:
        msgs.insert(0, {"role": "system", "content": line})
    return msgs


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The reply as a JSON object, or the first object embedded in it (code fences, prose)."""
    text = text.strip()
    try:
        whole = json.loads(text)
        return whole if isinstance(whole, dict) else None
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            found, _ = decoder.raw_decode(text, start)
            if isinstance(found, dict):
                return found
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return None


# -- helpers for checking model output ---------------------------------------------

_INT = re.compile(r"-?\d+")


def _as_int(value: Any) -> int | None:
    """Turn numbers arrive as 4, 4.0, "4" or "Turn 4"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _INT.search(value)
        return int(m.group()) if m else None
    return None


def _items(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _clean_line(value: Any) -> str:
    text = " ".join(str(value).split()) if value is not None else ""
    return text.lstrip("-*• ").strip()


def _clean_list(value: Any, limit: int) -> list[str]:
    """Strip, de-duplicate (case-insensitively) and cap a list of labels."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    out: list[str] = []
    seen: set[str] = set()
    for item in value:
        label = _clean_line(item)[:_MAX_LABEL_CHARS]
        if label and label.lower() not in seen:
            seen.add(label.lower())
            out.append(label)
        if len(out) == limit:
            break
    return out


def _clean_lines(value: Any) -> list[str]:
    """Note bullets: a list (or newline-separated text), stripped, exact duplicates dropped."""
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list):
        return []
    return list(dict.fromkeys(line for line in map(_clean_line, value) if line))


def clip_words(text: str, max_words: int) -> str:
    words = text.split()
    return " ".join(words[:max_words])


def _clip_text(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    return text[: max(0, budget - 1)].rstrip() + "…"


def render_turns(turns: Sequence[Turn], max_chars: int) -> list[str]:
    """Each turn as ``Speaker: text`` lines, all messages clipped by the same ratio.

    Clipping every message proportionally keeps the opening of each one (who
    said what) instead of dropping whole turns, and keeps the total of the
    message bodies within ``max_chars``.
    """
    total = sum(len(m.content) for t in turns for m in t.messages)
    ratio = 1.0 if total <= max_chars else max_chars / total

    def line(m: Message) -> str:
        body = m.content if ratio == 1.0 else _clip_text(m.content, int(len(m.content) * ratio))
        return f"{m.who}: {body}"

    return ["\n".join(line(m) for m in t.messages) for t in turns]


def _group_turns(turns: Sequence[Turn], max_chars: int) -> list[list[Turn]]:
    """Consecutive groups whose text fits ``max_chars`` (an oversized turn is a group alone)."""
    groups: list[list[Turn]] = []
    size = 0
    for turn in turns:
        n = sum(len(m.content) for m in turn.messages)
        if groups and size + n <= max_chars:
            groups[-1].append(turn)
            size += n
        else:
            groups.append([turn])
            size = n
    return groups


def _fallback_notes(turn: Turn) -> list[str]:
    return [f"{m.who} said: {_clip_text(' '.join(m.content.split()), 400)}"
            for m in turn.messages if m.content.strip()]


class OpenAIBuilder(LayerBuilder):
    """Builds L0, L1 and L2 with the builder model of an OpenAI-compatible endpoint.

    Model output is never trusted as is: summaries are clipped to the word
    limit, keyword and tag lists capped, and turn numbers the session does
    not have are dropped. A target turn the model skipped gets a plain
    extract of its first message, marked ``fallback="incomplete"`` (so the
    :class:`~memstrata.llm.fallback.FallbackBuilder` replaces it and a later
    ingest tries again), so the index never has holes.
    """

    name = "openai"

    def __init__(self, settings: Settings, meter: UsageMeter | None = None, *,
                 client: ChatClient | None = None) -> None:
        self._client = client if client is not None else ChatClient(settings, meter)
        self._max_words = settings.l0_max_summary_words
        self._window_chars = settings.l0_max_window_chars
        self._input_chars = settings.l1_max_input_chars

    @property
    def client(self) -> ChatClient:
        """The chat client (the profile extractor reads sessions with it too)."""
        return self._client

    @property
    def version(self) -> str:
        # Every setting that changes the output is in the version (it keys the
        # L1/L2 cache and is part of the index fingerprint); defaults add nothing.
        parts = ["openai", self._client.model_for("builder"), prompts.PROMPT_VERSION]
        if self._max_words != 30:
            parts.append(f"w{self._max_words}")
        if self._window_chars != 6000:
            parts.append(f"c{self._window_chars}")
        if self._input_chars != 12000:
            parts.append(f"i{self._input_chars}")
        return ":".join(parts)

    def summarize_window(self, window: Window) -> list[TurnSummary]:
        by_index = {t.index: t for t in window.turns}
        missing = [n for n in window.targets if n not in by_index]
        if missing:
            raise ValueError(f"window targets {missing} are not among its turns")
        if not window.targets:
            return []
        texts = render_turns(window.turns, self._window_chars)
        blocks = [(t.index, text) for t, text in zip(window.turns, texts, strict=True)]
        data = self._client.complete_json(
            "builder", prompts.l0_messages(window.meta, blocks, window.targets, self._max_words))
        targets = set(window.targets)
        found: dict[int, TurnSummary] = {}
        for item in _items(data, "turns"):
            if not isinstance(item, dict):
                continue
            n = _as_int(item.get("turn_number"))
            summary = clip_words(_clean_line(item.get("summary")), self._max_words)
            if n in targets and n not in found and summary:
                found[n] = TurnSummary(turn_index=n, summary=summary,
                                       keywords=_clean_list(item.get("keywords"), MAX_KEYWORDS),
                                       tags=_clean_list(item.get("tags"), MAX_TAGS))
        out = []
        for n in window.targets:
            if n not in found:
                log.warning("builder model skipped turn %d of session %s; using an extract",
                            n, window.meta.session_id)
                first = by_index[n].messages[0] if by_index[n].messages else None
                text = f"{first.who}: {first.content}" if first else f"Turn {n}"
                found[n] = TurnSummary(turn_index=n, summary=clip_words(text, self._max_words),
                                       fallback="incomplete")
            out.append(found[n])
        return out

    def key_facts(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[KeyFact]:
        if not turns:
            return []
        texts = render_turns(turns, self._input_chars)
        blocks = [(t.index, text) for t, text in zip(turns, texts, strict=True)]
        data = self._client.complete_json("builder", prompts.l1_messages(meta, blocks))
        valid = {t.index for t in turns}
        facts: list[KeyFact] = []
        seen: set[str] = set()
        for item in _items(data, "facts"):
            raw_turns: Any = []
            if isinstance(item, dict):
                text, raw_turns = _clean_line(item.get("text")), item.get("turns")
            else:
                text = _clean_line(item)
            if not text or text.lower() in seen:
                continue
            seen.add(text.lower())
            numbers = raw_turns if isinstance(raw_turns, list) else [raw_turns]
            indices = sorted({n for n in map(_as_int, numbers) if n in valid})
            facts.append(KeyFact(text=text, turn_indices=indices))
            if len(facts) == prompts.L1_MAX_FACTS:
                break
        return facts

    def turn_notes(self, meta: SessionMeta, turns: Sequence[Turn]) -> list[TurnNote]:
        """Long sessions are sent in consecutive groups that fit ``l1_max_input_chars``.

        Grouping (rather than clipping) keeps L2 lossless, which is the point
        of the layer; only a single turn longer than the limit is clipped.
        """
        notes: dict[int, list[str]] = {}
        for group in _group_turns(turns, self._input_chars):
            texts = render_turns(group, self._input_chars)
            blocks = [(t.index, text) for t, text in zip(group, texts, strict=True)]
            data = self._client.complete_json("builder", prompts.l2_messages(meta, blocks))
            valid = {t.index for t in group}
            for item in _items(data, "turns"):
                if not isinstance(item, dict):
                    continue
                n = _as_int(item.get("turn_number"))
                bullets = _clean_lines(item.get("notes"))
                if n in valid and bullets:
                    kept = notes.setdefault(n, [])
                    kept.extend(b for b in bullets if b not in kept)
        out = []
        for turn in turns:
            bullets = notes.get(turn.index) or _fallback_notes(turn)
            if turn.index not in notes:
                log.warning("builder model gave no notes for turn %d of session %s; "
                            "using its messages", turn.index, meta.session_id)
            out.append(TurnNote(turn_index=turn.index, bullets=bullets))
        return out
