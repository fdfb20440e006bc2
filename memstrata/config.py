"""Configuration: every knob is a ``MEMSTRATA_*`` environment variable.

Values can also come from a TOML file named by ``MEMSTRATA_CONFIG_FILE`` (keys
are the setting names without the prefix, lower case); environment variables
win over the file. Settings are checked at start-up, and a bad value is
reported with the variable that holds it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, FilePath, SecretStr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

ENV_PREFIX = "MEMSTRATA_"


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memstrata"


def _limit_role(role: str) -> str:
    """The role whose limits apply (the judge has no settings of its own)."""
    if role == "judge":
        return "generator"
    if role not in ("builder", "controller", "synthesizer", "generator"):
        raise ValueError(f"unknown LLM role {role!r}")
    return role


class ConfigError(ValueError):
    """A setting is missing or out of range; the message names the variable."""


class Settings(BaseSettings):
    """All of memstrata's settings, with the embedded offline stack as default."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", validate_default=True, case_sensitive=False
    )

    # -- where things live ------------------------------------------------
    data_dir: Path = Field(default_factory=_default_data_dir)
    config_file: Path | None = None

    # -- LLM --------------------------------------------------------------
    llm_backend: Literal["extractive", "openai"] = "extractive"
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    #: Seconds one attempt of one call may take (every role; each role can override it).
    llm_timeout_s: float = Field(30.0, gt=0, le=600)
    #: Extra attempts after a transient failure (429, 5xx, timeout, refused connection), so
    #: one call costs at most (1 + retries) x its role's timeout plus backoff.
    llm_max_retries: int = Field(1, ge=0, le=10)
    llm_timeout_builder_s: float | None = Field(None, gt=0, le=600)
    llm_timeout_controller_s: float | None = Field(None, gt=0, le=600)
    llm_timeout_synthesizer_s: float | None = Field(None, gt=0, le=600)
    llm_timeout_generator_s: float | None = Field(None, gt=0, le=600)
    #: Output cap (``max_tokens``) per role: a model that never stops is cut off,
    #: and a cut-off JSON reply counts as a failure (the fallback takes over).
    llm_max_tokens_builder: int = Field(1500, ge=16, le=131_072)
    llm_max_tokens_controller: int = Field(512, ge=16, le=131_072)
    llm_max_tokens_synthesizer: int = Field(1024, ge=16, le=131_072)
    llm_max_tokens_generator: int = Field(512, ge=16, le=131_072)
    #: After this many failed calls in a row the endpoint is taken as down: calls fail at
    #: once (the fallbacks answer) until ``llm_breaker_cooldown_s`` has passed; 0: never.
    llm_breaker_failures: int = Field(3, ge=0, le=1000)
    llm_breaker_cooldown_s: float = Field(30.0, gt=0, le=3600)
    #: An L1/L2 layer built by the extractive fallback is served from the cache for this
    #: long, then built again with the LLM on the next read.
    llm_fallback_retry_s: float = Field(300.0, ge=0, le=86_400)
    #: One model per role so that a strong controller can pair with a cheap generator.
    llm_model_builder: str = "gpt-4.1-mini"
    llm_model_controller: str = "gpt-4.1"
    llm_model_synthesizer: str = "gpt-4.1-mini"
    llm_model_generator: str = "gpt-4.1-mini"
    llm_temperature: float = Field(0.0, ge=0.0, le=2.0)

    # -- embeddings -------------------------------------------------------
    embed_backend: Literal["minilm", "openai"] = "minilm"
    embed_model: str = "text-embedding-3-small"
    embed_dim: int | None = Field(None, ge=8, le=8192)
    embed_model_path: Path | None = None
    embed_tokenizer_path: Path | None = None
    embed_batch_size: int = Field(64, ge=1, le=4096)
    embed_threads: int | None = Field(None, ge=1, le=256)
    #: MiniLM only: ``int8`` encodes queries with integer matrix products
    #: (:mod:`memstrata.embed.int8_graph`); stored vectors stay float either way.
    embed_query_arithmetic: Literal["float", "int8"] = "float"
    #: MiniLM only: let onnxruntime's idle threads spin. Off: 25% more Search
    #: calls/s with 8 concurrent callers, 0.4 ms slower alone (bench/README.md).
    embed_spin_wait: bool = False
    #: Query vectors kept per (tenant, user, text), LRU; 0 turns the cache off
    #: (:mod:`memstrata.embed.query_cache`). 4096 vectors take about 6 MiB.
    query_cache_size: int = Field(4096, ge=0, le=1_000_000)
    embed_base_url: str | None = None
    embed_api_key: SecretStr | None = None

    # -- stores -----------------------------------------------------------
    vector_backend: Literal["qdrant-edge", "qdrant"] = "qdrant-edge"
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    qdrant_collection: str = "memstrata_l0"
    #: CA bundle (PEM) that signs an https Qdrant's certificate; unset: the system's CAs.
    qdrant_ca_file: FilePath | None = None
    lexical_backend: Literal["tantivy", "opensearch"] = "tantivy"
    doc_backend: Literal["sqlite", "opensearch"] = "sqlite"
    opensearch_url: str | None = None
    opensearch_user: str | None = None
    opensearch_password: SecretStr | None = None
    #: CA bundle (PEM) that signs an https OpenSearch's certificate; unset: the system's CAs.
    opensearch_ca_file: FilePath | None = None
    opensearch_index_prefix: str = Field("memstrata", pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    #: Seconds one OpenSearch request may take, and retries when it cannot connect.
    opensearch_timeout_s: float = Field(10.0, gt=0, le=600)
    opensearch_max_retries: int = Field(2, ge=0, le=10)
    #: Qdrant Edge graph: m / ef_construct are Qdrant's defaults; scopes under the
    #: full-scan threshold (KB of vectors, ~6k points at dim 384) are scanned exactly.
    qdrant_edge_hnsw_m: int = Field(16, ge=4, le=128)
    qdrant_edge_hnsw_ef_construct: int = Field(100, ge=4, le=2000)
    qdrant_edge_full_scan_threshold_kb: int = Field(10_000, ge=0, le=10_000_000)
    qdrant_edge_hnsw_ef: int | None = Field(None, ge=1, le=10_000)
    #: Threads of the shard's search pool; None: one per CPU (Qdrant's default).
    qdrant_edge_search_threads: int | None = Field(None, ge=1, le=256)
    #: Memory tantivy's IndexWriter may buffer before it writes a segment.
    tantivy_heap_bytes: int = Field(64_000_000, ge=15_000_000, le=4_000_000_000)
    #: ``write``: every upsert is committed and searchable at once; ``flush``: upserts
    #: become searchable at the next flush (much cheaper turn-at-a-time appends).
    tantivy_commit: Literal["write", "flush"] = "write"

    # -- layers (APDMem Table 5) ------------------------------------------
    l0_window_turns: int = Field(4, ge=1, le=32)
    l0_window_overlap: int = Field(1, ge=0, le=16)
    l0_max_window_chars: int = Field(6000, ge=500, le=200_000)
    l0_max_summary_words: int = Field(30, ge=5, le=200)
    l1_max_input_chars: int = Field(12000, ge=1000, le=1_000_000)

    # -- retrieval (APDMem Appendix G; fusion defaults measured, see retrieval.hybrid) --
    #: ``dbsf``: normalised scores added with weights; ``rrf``: the appendix's RRF.
    fusion: Literal["dbsf", "rrf"] = "dbsf"
    rrf_k: int = Field(60, ge=1, le=10_000)
    #: The dense side's share when BM25's best hit covers every content term of the query.
    dense_weight: float = Field(0.3, ge=0.0, le=1.0)
    #: Shrink BM25's share per query by the part of the query its best hit lacks.
    coverage_weighting: bool = True
    keyword_alpha: float = Field(0.1, ge=0.0, le=10.0)
    keyword_max_matches: int = Field(3, ge=0, le=100)
    top_k_sessions: int = Field(20, ge=1, le=1000)
    #: The largest top_k a search may ask for.
    max_top_k: int = Field(1000, ge=1, le=100_000)
    #: Matching L0 units returned with each session hit.
    units_per_hit: int = Field(5, ge=1, le=100)
    #: Units each index returns per query before fusion (enough for top_k_sessions = 20).
    candidate_units: int = Field(50, ge=1, le=10_000)
    #: Share of the session score taken from BM25 over whole sessions (0 turns it off).
    session_lexical_weight: float = Field(0.7, ge=0.0, le=1.0)
    #: That share applies only when BM25's best L0 hit covers this much of the query ...
    session_min_unit_coverage: float = Field(0.6, ge=0.0, le=1.0)
    #: ... or the best session document covers this much of it.
    session_min_session_coverage: float = Field(0.8, ge=0.0, le=1.0)
    #: Sessions the session-level BM25 returns per query.
    session_candidates: int = Field(50, ge=1, le=10_000)
    #: Boost (times the best score) for candidate sessions dated in a period the query names.
    date_boost: float = Field(0.5, ge=0.0, le=10.0)

    # -- writing ----------------------------------------------------------
    #: When appends are flushed (index optimisation, OpenSearch refresh): after every
    #: ``call``, at the end of each ``batch`` (``ingest``, or whenever the caller
    #: calls ``flush()``), or after ``time`` (at most every ``flush_interval_s``).
    flush_policy: Literal["call", "batch", "time"] = "batch"
    flush_interval_s: float = Field(5.0, gt=0, le=3600)

    # -- request limits ---------------------------------------------------
    max_query_chars: int = Field(2000, ge=1, le=100_000)
    max_queries: int = Field(8, ge=1, le=64)

    @model_validator(mode="after")
    def _check_combinations(self) -> "Settings":
        if self.top_k_sessions > self.max_top_k:
            raise ValueError(
                f"MEMSTRATA_TOP_K_SESSIONS ({self.top_k_sessions}) must not exceed "
                f"MEMSTRATA_MAX_TOP_K ({self.max_top_k})"
            )
        if self.l0_window_overlap >= self.l0_window_turns:
            raise ValueError(
                f"MEMSTRATA_L0_WINDOW_OVERLAP ({self.l0_window_overlap}) must be smaller than "
                f"MEMSTRATA_L0_WINDOW_TURNS ({self.l0_window_turns})"
            )
        need = [
            (self.llm_backend == "openai" and not self.llm_base_url and not self.llm_api_key,
             "MEMSTRATA_LLM_BASE_URL or MEMSTRATA_LLM_API_KEY", "MEMSTRATA_LLM_BACKEND=openai"),
            (self.vector_backend == "qdrant" and not self.qdrant_url,
             "MEMSTRATA_QDRANT_URL", "MEMSTRATA_VECTOR_BACKEND=qdrant"),
            (self.lexical_backend == "opensearch" and not self.opensearch_url,
             "MEMSTRATA_OPENSEARCH_URL", "MEMSTRATA_LEXICAL_BACKEND=opensearch"),
            (self.doc_backend == "opensearch" and not self.opensearch_url,
             "MEMSTRATA_OPENSEARCH_URL", "MEMSTRATA_DOC_BACKEND=opensearch"),
            (self.embed_backend == "openai" and not (self.embed_base_url or self.llm_base_url
                                                     or self.embed_api_key or self.llm_api_key),
             "MEMSTRATA_EMBED_BASE_URL (or MEMSTRATA_LLM_BASE_URL)", "MEMSTRATA_EMBED_BACKEND=openai"),
        ]
        for missing, name, because in need:
            if missing:
                raise ValueError(f"{name} is required when {because}")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        # ``Settings(config_file=...)`` and MEMSTRATA_CONFIG_FILE name the same
        # file; the argument wins, as arguments do over variables.
        given = getattr(init_settings, "init_kwargs", {}).get("config_file")
        path = str(given) if given else os.environ.get(ENV_PREFIX + "CONFIG_FILE")
        if path:
            if not Path(path).is_file():
                raise ConfigError(f"MEMSTRATA_CONFIG_FILE: no such file: {path}")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    # -- per-role LLM limits --------------------------------------------------
    def llm_timeout_for(self, role: str) -> float:
        """Seconds per attempt for ``role`` (the judge shares the generator's limits)."""
        own = getattr(self, f"llm_timeout_{_limit_role(role)}_s")
        return float(own) if own is not None else self.llm_timeout_s

    def llm_max_tokens_for(self, role: str) -> int:
        """The ``max_tokens`` sent with every call of ``role``."""
        return int(getattr(self, f"llm_max_tokens_{_limit_role(role)}"))

    # -- derived paths ----------------------------------------------------
    @property
    def vector_dir(self) -> Path:
        return self.data_dir / "vectors"

    @property
    def lexical_dir(self) -> Path:
        return self.data_dir / "lexical"

    @property
    def session_lexical_dir(self) -> Path:
        return self.data_dir / "session-lexical"

    @property
    def docs_path(self) -> Path:
        return self.data_dir / "docs.sqlite3"


# -- namespaces owned by other settings classes ------------------------------
#: Entry-point group through which services register their settings classes.
NAMESPACE_GROUP = "memstrata.settings"

#: Namespaces of memstrata itself that live in their own classes (loaded lazily,
#: and also registered through the entry point, so either route finds them).
_BUILTIN_NAMESPACES = {"controller": "memstrata.controller.config:ControllerSettings"}

_registered: dict[str, type[BaseSettings]] = {}


def register_namespace(cls: type[BaseSettings]) -> type[BaseSettings]:
    """Accept ``cls``'s ``MEMSTRATA_<NS>_*`` variables (usable as a class decorator).

    The entry point is the normal route; this is for code that builds a
    settings class at run time (and for tests).
    """
    _registered[_prefix_of(cls)] = cls
    return cls


def _prefix_of(cls: type[BaseSettings]) -> str:
    prefix = str(cls.model_config.get("env_prefix") or "").upper()
    if not prefix.startswith(ENV_PREFIX) or prefix == ENV_PREFIX:
        raise ConfigError(f"{cls.__qualname__}: env_prefix must be MEMSTRATA_<NAMESPACE>_, "
                          f"got {prefix!r}")
    return prefix


def _load(target: str) -> type[BaseSettings]:
    import importlib

    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def settings_namespaces() -> tuple[dict[str, type[BaseSettings]], dict[str, str]]:
    """Every settings class that owns a ``MEMSTRATA_<NS>_`` namespace, by prefix.

    A service registers its class in its ``pyproject.toml``::

        [project.entry-points."memstrata.settings"]
        stream = "streams.settings:StreamSettings"

    The class is a pydantic-settings ``BaseSettings`` whose ``env_prefix`` is
    its namespace (``MEMSTRATA_STREAM_``, ``MEMSTRATA_KAFKA_``...); its module
    should import little, since every start-up loads it to check variables.
    Core config never names the services: once installed, their variables
    are accepted and unknown names in their namespace are refused like ours.
    Returns the classes and, for entry points that failed to load, why.
    """
    found, failed = _plugin_namespaces()
    return {**found, **_registered}, dict(failed)


@functools.lru_cache(maxsize=1)
def _plugin_namespaces() -> tuple[dict[str, type[BaseSettings]], dict[str, str]]:
    from importlib.metadata import entry_points

    found: dict[str, type[BaseSettings]] = {}
    failed: dict[str, str] = {}
    targets = dict(_BUILTIN_NAMESPACES)
    for ep in entry_points(group=NAMESPACE_GROUP):
        targets[ep.name] = ep.value
    for name, target in targets.items():
        try:
            cls = _load(target)
            found.setdefault(_prefix_of(cls), cls)
        except Exception as exc:  # a broken plug-in must not hide our own errors
            failed[name] = f"{target}: {type(exc).__name__}: {exc}"
    return found, failed


def unknown_variables(environ: dict[str, str] | None = None) -> list[str]:
    """MEMSTRATA_* variables that no settings class reads (typos, stale names)."""
    env = os.environ if environ is None else environ
    known = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    namespaces, _ = settings_namespaces()
    for prefix, cls in namespaces.items():
        known |= {prefix + name.upper() for name in cls.model_fields}
    return sorted(k for k in env if k.upper().startswith(ENV_PREFIX) and k.upper() not in known)


def load_settings(**overrides: Any) -> Settings:
    """Build :class:`Settings`, turning validation failures into one readable error.

    Each problem is reported as ``MEMSTRATA_<NAME>: <why>`` so an operator can
    tell at once which variable to fix.
    """
    stray = unknown_variables()
    if stray:
        _, failed = settings_namespaces()
        lines = [f"{name}: not a memstrata setting (see `memstrata config`)" for name in stray]
        lines += [f"settings namespace {name!r} failed to load ({why})"
                  for name, why in failed.items()]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ()) if p != "__root__"]
            name = (ENV_PREFIX + loc[0].upper()) if loc else "settings"
            msg = err.get("msg", "invalid")
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, "):]
            value = err.get("input")
            secret = bool(loc) and any(w in loc[0] for w in ("key", "password"))
            shown = "" if not loc or secret or isinstance(value, dict) else f" (got {value!r})"
            lines.append(f"{name}: {msg}{shown}" if loc else msg)
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
