"""What building memory cost: builder tokens, in all, per session and per user.

APDMem reports the offline cost of building memory beside the online cost of
answering; ``memstrata ingest`` prints the first, ``eval qa`` shares it out
over each user's questions. The builder books every LLM
call on the process's :class:`~memstrata.llm.usage.UsageMeter`; reading the
meter's ``builder`` totals between one session handed to the writer and the
next gives each session's share, because the writer builds a session's
windows before it asks for the next session.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from memstrata.llm.usage import PriceTable, Role, RoleUsage, UsageMeter
from memstrata.model import Session

ROLE: Role = "builder"


@dataclass(frozen=True)
class SessionCost:
    """The builder calls one session's ingest made."""

    tenant_id: str
    user_id: str
    session_id: str
    usage: RoleUsage


def _minus(a: RoleUsage, b: RoleUsage) -> RoleUsage:
    return RoleUsage(calls=a.calls - b.calls, prompt_tokens=a.prompt_tokens - b.prompt_tokens,
                     completion_tokens=a.completion_tokens - b.completion_tokens)


@dataclass
class ConstructionMeter:
    """Follows the builder's usage on ``meter`` while sessions are handed to a writer."""

    meter: UsageMeter
    sessions: list[SessionCost] = field(default_factory=list)
    _by_model: dict[str, RoleUsage] = field(default_factory=dict)

    def _builder(self) -> RoleUsage:
        return self.meter.snapshot().get(ROLE, RoleUsage())

    def track(self, sessions: Iterable[Session]) -> Iterator[Session]:
        """``sessions`` as they are, noting what each one's build cost."""
        start = self._models()
        for s in sessions:
            before = self._builder()
            yield s  # the writer builds this session before it asks for the next
            used = _minus(self._builder(), before)
            self.sessions.append(SessionCost(s.scope.tenant_id, s.scope.user_id,
                                             s.session_id, used))
        end = self._models()
        self._by_model = {m: _minus(u, start.get(m, RoleUsage())) for m, u in end.items()}

    def _models(self) -> dict[str, RoleUsage]:
        """Builder usage per model (the meter keys by role and model)."""
        out: dict[str, RoleUsage] = {}
        for (role, model), usage in self.meter.by_role_model().items():
            if role == ROLE:
                out[model] = out.get(model, RoleUsage()) + usage
        return out

    def by_user(self) -> dict[tuple[str, str], RoleUsage]:
        """Builder usage per (tenant, user): the construction of each user's haystack."""
        out: dict[tuple[str, str], RoleUsage] = {}
        for s in self.sessions:
            key = (s.tenant_id, s.user_id)
            out[key] = out.get(key, RoleUsage()) + s.usage
        return out

    @property
    def total(self) -> RoleUsage:
        total = RoleUsage()
        for s in self.sessions:
            total = total + s.usage
        return total

    def cost(self, prices: PriceTable) -> tuple[float, list[str]]:
        """USD of the builder calls, and the models the table has no price for."""
        usd, unpriced = 0.0, []
        for model, usage in self._by_model.items():
            price = prices.price_for(model)
            if price is None:
                if usage.total_tokens:
                    unpriced.append(model)
                continue
            usd += price.cost(usage.prompt_tokens, usage.completion_tokens)
        return usd, unpriced

    def session_cost(self, s: SessionCost, prices: PriceTable, model: str | None) -> float | None:
        """A session's USD when one model did all the building (else None)."""
        price = prices.price_for(model) if model is not None else None
        if price is None:
            return None
        return price.cost(s.usage.prompt_tokens, s.usage.completion_tokens)

    @property
    def only_model(self) -> str | None:
        used = [m for m, u in self._by_model.items() if u.calls]
        return used[0] if len(used) == 1 else None


def describe(usage: RoleUsage, usd: float | None, unpriced: Sequence[str] = ()) -> str:
    """``3 builder calls, 1200 tokens in / 200 out, $0.000123`` (or why there is no cost)."""
    text = (f"{usage.calls} builder call{'s' if usage.calls != 1 else ''}, "
            f"{usage.prompt_tokens} tokens in / {usage.completion_tokens} out")
    if not usage.calls:
        return text
    if unpriced:
        return (f"{text}, cost unknown (no price for {', '.join(map(repr, unpriced))}: "
                f"set MEMSTRATA_CONTROLLER_PRICE_TABLE)")
    return text if usd is None else f"{text}, ${usd:.6f}"
