"""``MEMSTRATA_REDACT_*``: redaction of sensitive values before anything is stored.

Registered in the ``memstrata.settings`` entry point group (``redact``), so the
variables and the TOML file's ``[redact]`` table are checked like every other
namespace. This module imports nothing heavy: every start-up loads it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memstrata.redact.policy import Mode
from memstrata.redact.types import RULE_KINDS

__all__ = ["ENV_PREFIX", "RedactSettings"]

ENV_PREFIX = "MEMSTRATA_REDACT_"


def _names(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


class RedactSettings(BaseSettings):
    """How messages are redacted on the write path (every route: batch, append, stream, Ingest)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      validate_default=True, case_sensitive=False)

    #: The default for every tenant the policy file does not name: ``off`` (store as sent),
    #: ``mask`` (replace each value with a typed placeholder such as ``[EMAIL]``) or
    #: ``drop`` (a message holding a value is never stored).
    mode: Mode = "off"
    #: The kinds looked for, comma-separated: ``email``, ``phone``, ``card``, ``iban``, ``ip``
    #: and, with ``presidio`` on, Presidio's (``person``, ``location``...).
    kinds: str = ",".join(RULE_KINDS)
    #: A TOML or JSON file with a ``default`` rule and per-tenant rules (``tenants.<id>``:
    #: ``mode``, ``kinds``); read again when it changes. Unset: the two settings above
    #: for every tenant.
    policy_file: Path | None = None
    #: Also run Microsoft Presidio (the ``presidio`` extra and an installed spaCy model,
    #: never downloaded): names, places and national ids that rules cannot see.
    presidio: bool = False
    #: The spaCy model Presidio uses (its package must be installed).
    presidio_model: str = "en_core_web_lg"
    #: The language code Presidio analyses in (the model's language).
    presidio_language: str = Field("en", min_length=2, max_length=8)
    #: Presidio entity types looked for, comma-separated (its own names: ``PERSON``...).
    presidio_entities: str = ("PERSON,LOCATION,US_SSN,US_PASSPORT,US_DRIVER_LICENSE,UK_NHS,"
                              "MEDICAL_LICENSE,CRYPTO")
    #: Presidio results scoring below this are ignored.
    presidio_min_score: float = Field(0.5, ge=0.0, le=1.0)

    @field_validator("kinds")
    @classmethod
    def _known_rule_kinds(cls, value: str) -> str:
        names = _names(value)
        if not names:
            raise ValueError(f"at least one kind is required (known: {', '.join(RULE_KINDS)})")
        return ",".join(names)

    @field_validator("presidio_entities")
    @classmethod
    def _entity_names(cls, value: str) -> str:
        names = _names(value)
        bad = [n for n in names if not n.replace("_", "").isalnum() or n.upper() != n]
        if bad or not names:
            raise ValueError("Presidio entity types in capitals, comma-separated "
                             "(PERSON,LOCATION...)")
        return ",".join(names)

    @property
    def kind_list(self) -> tuple[str, ...]:
        return _names(self.kinds)

    @property
    def entity_list(self) -> tuple[str, ...]:
        return _names(self.presidio_entities)

    @staticmethod
    def variable(name: str) -> str:
        return ENV_PREFIX + name.upper()
