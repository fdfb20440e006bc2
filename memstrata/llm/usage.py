"""Token accounting per LLM role, and what those tokens cost.

The paper reports construction and controller cost separately (Appendix H), so
every call is booked against the role that made it (builder, controller,
synthesizer, generator, judge) and the model that served it. Cost is derived
afterwards from a :class:`PriceTable`, because prices change more often than
the code and differ between providers.
"""

from __future__ import annotations

import json
import threading
import tomllib
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Role = Literal["builder", "controller", "synthesizer", "generator", "judge"]
ROLES: tuple[Role, ...] = get_args(Role)


class PriceError(ValueError):
    """A price table is unreadable, or has no price for a model that was used."""


class RoleUsage(BaseModel):
    """Calls and tokens booked against one role (or one model, or in total)."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: RoleUsage) -> RoleUsage:
        return RoleUsage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class ModelPrice(BaseModel):
    """USD per one million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok
                + completion_tokens * self.output_per_mtok) / 1_000_000


class PriceTable(BaseModel):
    """Prices per model name.

    A model name matches its own entry or, failing that, the longest entry it
    starts with, so a dated snapshot (``gpt-4.1-mini-2025-04-14``) is priced
    like its family (``gpt-4.1-mini``).

    File format (JSON, or TOML with the same keys)::

        {"models": {"my-model": {"input_per_mtok": 0.4, "output_per_mtok": 1.6}}}
    """

    model_config = ConfigDict(extra="forbid")

    models: dict[str, ModelPrice] = Field(default_factory=dict)

    @classmethod
    def example(cls) -> PriceTable:
        """EXAMPLE prices only (public list prices seen in 2025, USD per 1M tokens).

        They go stale and ignore discounts, batch rates and cached input;
        operators should load their own table with :meth:`load`.
        """
        return cls(models={name: ModelPrice(input_per_mtok=i, output_per_mtok=o)
                           for name, (i, o) in _EXAMPLE_PRICES.items()})

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """Read a ``.json`` or ``.toml`` price file."""
        p = Path(path)
        try:
            raw = p.read_bytes()
            data = tomllib.loads(raw.decode()) if p.suffix.lower() == ".toml" else json.loads(raw)
            return cls.model_validate(data)
        except (OSError, ValueError, ValidationError) as exc:
            raise PriceError(f"cannot read price table {p}: {exc}") from exc

    def price_for(self, model: str) -> ModelPrice | None:
        if model in self.models:
            return self.models[model]
        family = [name for name in self.models if model.startswith(name)]
        return self.models[max(family, key=len)] if family else None


# (input, output) USD per 1M tokens -- EXAMPLES, override with PriceTable.load().
_EXAMPLE_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
}


class UsageMeter:
    """Thread-safe running totals keyed by (role, model).

    One meter is shared by every client of a process (ingest workers and
    query threads alike), hence the lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[Role, str], RoleUsage] = {}
        self._fallbacks: dict[tuple[Role, str], int] = {}

    def record_fallback(self, role: Role, reason: str) -> None:
        """Something the ``role`` model should have built was built without it (why: ``reason``).

        Exported as ``memstrata_llm_fallbacks_total{role,reason}`` by
        :mod:`memstrata.llm.metrics`.
        """
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        with self._lock:
            self._fallbacks[(role, reason)] = self._fallbacks.get((role, reason), 0) + 1

    def fallbacks(self) -> dict[tuple[Role, str], int]:
        """Fallbacks so far by (role, reason)."""
        with self._lock:
            return dict(self._fallbacks)

    def record(self, role: Role, prompt_tokens: int, completion_tokens: int, model: str) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        if prompt_tokens < 0 or completion_tokens < 0:
            raise ValueError("token counts cannot be negative")
        add = RoleUsage(calls=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        with self._lock:
            key = (role, model)
            self._by_key[key] = self._by_key.get(key, RoleUsage()) + add

    def snapshot(self) -> dict[Role, RoleUsage]:
        """Usage per role (roles never used are left out)."""
        out: dict[Role, RoleUsage] = {}
        for (role, _), usage in self._items():
            out[role] = out.get(role, RoleUsage()) + usage
        return out

    def by_model(self) -> dict[str, RoleUsage]:
        """Usage per model name, across roles."""
        out: dict[str, RoleUsage] = {}
        for (_, model), usage in self._items():
            out[model] = out.get(model, RoleUsage()) + usage
        return out

    def by_role_model(self) -> dict[tuple[Role, str], RoleUsage]:
        """Usage per (role, model): what a role's calls cost needs the model's price."""
        return dict(self._items())

    def totals(self) -> RoleUsage:
        total = RoleUsage()
        for _, usage in self._items():
            total = total + usage
        return total

    def reset(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._fallbacks.clear()

    def cost_usd(self, prices: PriceTable, *, strict: bool = True) -> float:
        """Cost of everything recorded so far.

        With ``strict`` a model that has tokens but no price raises
        :class:`PriceError` rather than being silently counted as free;
        ``strict=False`` skips such models.
        """
        total = 0.0
        for model, usage in self.by_model().items():
            price = prices.price_for(model)
            if price is None:
                if strict and usage.total_tokens:
                    raise PriceError(f"no price for model {model!r} in the price table")
                continue
            total += price.cost(usage.prompt_tokens, usage.completion_tokens)
        return total

    def _items(self) -> list[tuple[tuple[Role, str], RoleUsage]]:
        with self._lock:
            return list(self._by_key.items())
