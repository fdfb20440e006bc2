"""Controller limits and ablation switches (APDMem Table 5 defaults).

They live in their own settings class, read from ``MEMSTRATA_CONTROLLER_*``
variables, so that the controller can be tuned (and the paper's ablations
reproduced) without touching the storage settings in :mod:`memstrata.config`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.config import ConfigError
from memstrata.llm.usage import PriceTable

ENV_PREFIX = "MEMSTRATA_CONTROLLER_"

#: Ablation names as the CLI takes them (``--without l1``), mapped to the switch they turn off.
ABLATIONS: dict[str, str] = {
    "controller": "use_controller",
    "l1": "use_l1",
    "l2": "use_l2",
    "l3": "use_l3",
    "reflect": "use_reflect",
    "decompose": "use_decompose",
    "interpret_dates": "use_interpret_dates",
    "notes": "use_notes",
    "draft": "use_draft",
    "profiles": "use_profiles",
    "graph": "use_graph",
    "profile_match": "use_profile_match",
}

Policy = Literal["auto", "rules", "llm"]
#: What an answer does when an LLM call fails (after its retries): answer offline
#: (rule policy, quoted answer; marked) or fail with the LLM's error.
OnLLMError = Literal["offline", "fail"]


class ControllerSettings(BaseSettings):
    """How far the controller may go, and which of its parts are switched on."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", validate_default=True, case_sensitive=False
    )

    #: ``auto``: the LLM policy when a chat client is configured, else the rule policy.
    policy: Policy = "auto"
    #: ``offline``: an answer whose LLM calls fail is given by the rule policy and the
    #: extractive answer, marked (``Answer.fallback``, an ``llm-fallback`` trace step);
    #: ``fail``: the error is raised.
    on_llm_error: OnLLMError = "offline"
    #: Seconds one whole answer may take (every LLM call in it, the L1/L2 builds it
    #: causes included); over gRPC the call's deadline, when shorter, wins. The LLM path
    #: gets the budget less a reserve for the offline answer (a quarter, 1-10 s); when
    #: it cannot finish by then the answer is given offline, marked ``<role>: budget``.
    answer_budget_s: float = Field(120.0, gt=0, le=3600)
    #: Within one answer, a model endpoint that timed out this many times is not
    #: called again (its later steps fail at once, or fall back to the extractive builder).
    llm_skip_after_timeouts: int = Field(1, ge=1, le=100)

    # -- budgets (Table 5) ------------------------------------------------
    max_steps: int = Field(20, ge=1, le=200)
    max_nudges: int = Field(2, ge=0, le=10)
    max_reflections: int = Field(2, ge=0, le=10)
    auto_drill: int = Field(3, ge=0, le=20)
    max_drilled_sessions: int = Field(10, ge=1, le=200)
    max_raw_turns: int = Field(20, ge=0, le=500)
    #: Raw turns returned by one ``read_raw`` call when the caller does not say.
    raw_turns_per_read: int = Field(3, ge=1, le=50)
    #: Sessions returned by ``search`` (None: the retriever's top-K, 20 by default).
    search_top_k: int | None = Field(None, ge=1, le=1000)
    #: Queries one ``search`` call may carry.
    max_queries_per_search: int = Field(5, ge=1, le=8)
    #: Sessions read at every layer when the controller is switched off (plain top-K).
    rag_sessions: int = Field(3, ge=1, le=50)
    #: Evidence text handed to an LLM (notes, answer, reflection) is clipped to this.
    max_evidence_chars: int = Field(24_000, ge=1000, le=1_000_000)

    # -- ablations (Table 4 and Table 11) ---------------------------------
    use_controller: bool = True
    use_l1: bool = True
    use_l2: bool = True
    use_l3: bool = True
    use_reflect: bool = True
    use_decompose: bool = True
    use_interpret_dates: bool = True
    use_notes: bool = True
    use_draft: bool = True
    #: The entity and persona profiles as a cross-session layer (``read_profile``).
    use_profiles: bool = True
    #: Searches expand through the relation graph when the question asks for a relation
    #: or several hops (memstrata.route_plan). Off by default: on LoCoMo dev it moved
    #: neither session recall nor answers beyond noise, and a remote reader ranks flat,
    #: so answers over a client would differ from a local memory's (docs/profiles.md).
    use_graph: bool = False
    #: Searches lift the sessions of the profile bullets, of the entities a question
    #: names, closest to it in meaning (route_plan ``match``). Off by default: LoCoMo dev
    #: multi-hop session R@5 +0.037 overall, but within noise on the half it was tuned
    #: on, and answers did not move (docs/profiles.md).
    use_profile_match: bool = False

    # -- cost ---------------------------------------------------------------
    #: JSON or TOML price table; the example table of :mod:`memstrata.llm.usage` otherwise.
    price_table: Path | None = None

    def without(self, names: Iterable[str]) -> "ControllerSettings":
        """A copy with the named parts switched off (names as in :data:`ABLATIONS`)."""
        changes: dict[str, Any] = {}
        for raw in names:
            name = raw.strip().lower().replace("-", "_")
            if name.startswith("w/o_") or name.startswith("no_"):
                name = name.split("_", 1)[1]
            if name not in ABLATIONS:
                raise ConfigError(
                    f"unknown ablation {raw!r}; expected one of {', '.join(ABLATIONS)}")
            changes[ABLATIONS[name]] = False
        return self.model_copy(update=changes)

    @property
    def ablations(self) -> list[str]:
        """The parts switched off, for reports."""
        fields = type(self).model_fields
        # An opt-in part (off by default, as ``graph``) is not an ablation until turned on.
        return [name for name, field in ABLATIONS.items()
                if not getattr(self, field) and fields[field].default]

    def prices(self) -> PriceTable:
        return PriceTable.load(self.price_table) if self.price_table else PriceTable.example()


def load_controller_settings(**overrides: Any) -> ControllerSettings:
    """This namespace alone, with the errors of :func:`memstrata.config.load_config`."""
    from memstrata.config import load_namespace

    return load_namespace(ControllerSettings, **overrides)
