"""Configuration: every knob is a ``MEMSTRATA_*`` environment variable.

The core's :class:`Settings` own ``MEMSTRATA_<NAME>``; other settings classes
own a namespace ``MEMSTRATA_<NS>_<NAME>`` each and are registered one way, the
``memstrata.settings`` entry point group. Each entry point (a CLI command,
``python -m streams``, ``python -m workers``, the server start) calls
:func:`load_config` once, which builds every namespace and hands the instances
down; library code never builds settings from the environment itself.

Values can also come from a TOML file named by ``MEMSTRATA_CONFIG_FILE``: the
core's settings as top-level keys (the names without the prefix, lower case) or
in their group's table (``[retrieval]`` / ``rrf_k``; :class:`SettingsGroup`), a
namespace's in a table named for it (``[stream]`` for ``MEMSTRATA_STREAM_*``).
Environment variables win over the file. Every validation error, whichever
namespace it is in, is written by one formatter naming the variable (or the
file's key) that holds the bad value.
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FilePath,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from memstrata.limits import MAX_TOP_K
from memstrata.native_heap import MAX_KIB as MMAP_THRESHOLD_MAX_KIB
from memstrata.unit_caches import DEFAULT_ENTRIES as UNIT_CACHE_ENTRIES
from memstrata.unit_caches import MAX_ENTRIES as UNIT_CACHE_MAX_ENTRIES
from memstrata.memo import MAX_CAP as MEMO_MAX_CAP

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


class SettingsGroup(BaseModel):
    """One concern's settings, typed and frozen (``settings.retrieval`` is a :class:`RetrievalGroup`).

    Each field (type, bounds, default and ``#:`` comment) is declared once, in
    its group below. :class:`Settings` inherits every group, so each variable
    keeps its flat name (``MEMSTRATA_RRF_K``, the file's ``rrf_k``) and
    ``settings.rrf_k`` still reads it; ``settings.<group>`` builds the group
    from those flat values, so code that needs one concern can take it alone,
    typed (``def rank(params: RetrievalGroup)``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


class PathsGroup(SettingsGroup):
    """Where things live: the data dir and the TOML file."""

    data_dir: Path = Field(default_factory=_default_data_dir)
    config_file: Path | None = None

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


class LlmGroup(SettingsGroup):
    """The LLM endpoint, its models per role, and each role's limits."""

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


    def llm_timeout_for(self, role: str) -> float:
        """Seconds per attempt for ``role`` (the judge shares the generator's limits)."""
        own = getattr(self, f"llm_timeout_{_limit_role(role)}_s")
        return float(own) if own is not None else self.llm_timeout_s

    def llm_max_tokens_for(self, role: str) -> int:
        """The ``max_tokens`` sent with every call of ``role``."""
        return int(getattr(self, f"llm_max_tokens_{_limit_role(role)}"))



class EmbeddingGroup(SettingsGroup):
    """The encoder of units and queries, and the query vector cache."""

    #: ``minilm`` (default), ``openai``, or a static token-table encoder
    #: (:mod:`memstrata.embed.static`): ``wordllama`` (the table the wordllama
    #: wheel ships) or ``minilm-static`` (distilled once from the shipped MiniLM).
    #: Each names its own index fingerprint: a data dir indexed by another is refused.
    embed_backend: Literal["minilm", "openai", "wordllama", "minilm-static"] = "minilm"
    embed_model: str = "text-embedding-3-small"
    embed_dim: int | None = Field(None, ge=8, le=8192)
    embed_model_path: Path | None = None
    embed_tokenizer_path: Path | None = None
    embed_batch_size: int = Field(64, ge=1, le=4096)
    #: onnxruntime's threads per encoder call. Unset: 1 for the integer products
    #: (one text per call), onnxruntime's own choice (one per core) for float.
    embed_threads: int | None = Field(None, ge=1, le=256)
    #: MiniLM only: ``int8`` runs the weight products in integer arithmetic
    #: (:mod:`memstrata.embed.int8_graph`) for stored vectors and queries: about
    #: half the encoder CPU, recall unchanged (README, "Encoder choice").
    #: ``float`` is the previous path; the two index a data dir differently.
    embed_arithmetic: Literal["float", "int8"] = "int8"
    #: MiniLM only: set the query side apart from ``embed_arithmetic`` (unset: the same).
    embed_query_arithmetic: Literal["float", "int8"] | None = None
    #: MiniLM only: let onnxruntime's idle threads spin. Off: 25% more Search
    #: calls/s with 8 concurrent callers, 0.4 ms slower alone (bench/README.md).
    embed_spin_wait: bool = False
    #: ``minilm-static`` only: where the distilled token table is cached (about
    #: 45 MB, built once in ~30 s of CPU; the name carries the model's hash).
    #: Unset: ``$XDG_CACHE_HOME/memstrata`` or ``~/.cache/memstrata``.
    embed_static_cache_dir: Path | None = None
    #: Query vectors kept per (tenant, user, text), LRU; 0 turns the cache off
    #: (:mod:`memstrata.embed.query_cache`). 4096 vectors take about 6 MiB.
    query_cache_size: int = Field(4096, ge=0, le=1_000_000)
    embed_base_url: str | None = None
    embed_api_key: SecretStr | None = None



class StoresGroup(SettingsGroup):
    """The vector, lexical and document stores and their tuning."""

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
    #: Commits after which each tantivy index is reopened (0: never). tantivy keeps about
    #: a kilobyte per commit until its index is dropped; a reopen took up to 37 ms
    #: (bench.tantivy_reopen).
    tantivy_reopen_commits: int = Field(1000, ge=0, le=1_000_000)
    #: KiB from which glibc gives an allocation its own mapping, returned when freed, in
    #: ``serve``, ``up`` and ``worker`` (pinned: glibc's default slides up to 32 MiB, and the
    #: stores' per-commit buffers then stay resident in its arenas); 0 leaves glibc's default.
    malloc_mmap_threshold_kb: int = Field(128, ge=0, le=MMAP_THRESHOLD_MAX_KIB)
    #: Units each of the process's three unit caches keeps (parsed units, their search
    #: facts, their wire messages) in ``serve``, ``up`` and ``worker``: about 30 MB of
    #: heap per 8,192 together, which a steady load fills within minutes; 0: no caching.
    unit_cache_entries: int = Field(UNIT_CACHE_ENTRIES, ge=0, le=UNIT_CACHE_MAX_ENTRIES)
    #: A cap on the entries of every process cache in ``serve``, ``up`` and ``worker``: the
    #: unit caches and the text helpers' memo caches (words, phrases, lines; up to 65,536
    #: entries each, which real traffic takes hours to fill). Unset: each keeps its own
    #: bound; lower it for a smaller, sooner-flat heap at some cost in CPU; 0: none cache.
    cache_max_entries: int | None = Field(None, ge=0, le=MEMO_MAX_CAP)



class LayersGroup(SettingsGroup):
    """How L0 windows and L1 inputs are cut (APDMem Table 5)."""

    l0_window_turns: int = Field(4, ge=1, le=32)
    l0_window_overlap: int = Field(1, ge=0, le=16)
    l0_max_window_chars: int = Field(6000, ge=500, le=200_000)
    l0_max_summary_words: int = Field(30, ge=5, le=200)
    l1_max_input_chars: int = Field(12000, ge=1000, le=1_000_000)



class RetrievalGroup(SettingsGroup):
    """The retriever's parameters (APDMem Appendix G; fusion defaults measured, see
    :mod:`memstrata.retrieval.hybrid`) and a search's request limits."""

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
    #: The largest top_k a search may ask for (memstrata.limits owns the number and the check).
    max_top_k: int = Field(MAX_TOP_K, ge=1, le=MAX_TOP_K)
    #: Matching L0 units returned with each session hit.
    units_per_hit: int = Field(5, ge=1, le=100)
    #: Units each index returns per query before fusion (enough for top_k_sessions = 20).
    #: 40, not 50: session R@5 the same or better on LoCoMo dev and both LongMemEval
    #: sets (paired), about 5% less CPU per Search; 30 measured LoCoMo -0.0005 and
    #: holdout nDCG@5 -0.011 (-0.034 .. 0.000), 20 LoCoMo -0.005 (README).
    candidate_units: int = Field(40, ge=1, le=10_000)
    #: Share of the session score taken from BM25 over whole sessions (0 turns it off).
    session_lexical_weight: float = Field(0.7, ge=0.0, le=1.0)
    #: That share applies only when BM25's best L0 hit covers this much of the query ...
    session_min_unit_coverage: float = Field(0.6, ge=0.0, le=1.0)
    #: ... or the best session document covers this much of it.
    session_min_session_coverage: float = Field(0.8, ge=0.0, le=1.0)
    #: Sessions the session-level BM25 returns per query.
    session_candidates: int = Field(50, ge=1, le=10_000)
    #: A query whose best BM25 hit holds at least ``dense_skip_coverage`` of its content
    #: words is ranked by BM25 alone: no query encoding, no vector search. At full
    #: coverage the dense side's share is small (0.3 of the unit score, which the
    #: whole-session BM25 then outweighs): LoCoMo dev session R@5 -0.0013 (-0.0030 ..
    #: 0.0000), both LongMemEval sets unchanged, for 8-16% less CPU per Search (README).
    dense_skip: bool = True
    dense_skip_coverage: float = Field(1.0, gt=0.0, le=1.0)
    #: Boost (times the best score) for candidate sessions dated in a period the query names.
    date_boost: float = Field(0.5, ge=0.0, le=10.0)
    #: Request limits of a search: characters per query, queries per call.
    max_query_chars: int = Field(2000, ge=1, le=100_000)
    max_queries: int = Field(8, ge=1, le=64)



class WritingGroup(SettingsGroup):
    """When writes are flushed, the free-space floor, and the profiles step."""

    #: When appends are flushed (index optimisation, OpenSearch refresh): after every
    #: ``call``, at the end of each ``batch`` (``ingest``, or whenever the caller
    #: calls ``flush()``), or after ``time`` (at most every ``flush_interval_s``).
    flush_policy: Literal["call", "batch", "time"] = "batch"
    flush_interval_s: float = Field(5.0, gt=0, le=3600)
    #: Writes into the embedded stores are refused (deletes are not) while the data dir's
    #: volume has less free space than this: a full disk then fails a write cleanly,
    #: before any store is touched (Qdrant Edge writes through memory maps, and a full
    #: volume kills the process with SIGBUS there). 0: no check.
    min_free_mb: int = Field(100, ge=0, le=1_000_000)
    #: Keep entity and persona profiles (``memstrata profile``) on the write path: the rules
    #: of :mod:`memstrata.profiles` read every written session. Off: writes skip them (what
    #: is stored stays; deletes still remove a session's part of it).
    profiles: bool = True



#: The groups by name, in declaration order: ``settings.<name>`` is that group.
GROUP_CLASSES: dict[str, type[SettingsGroup]] = {
    "paths": PathsGroup, "llm": LlmGroup, "embedding": EmbeddingGroup, "stores": StoresGroup,
    "layers": LayersGroup, "retrieval": RetrievalGroup, "writing": WritingGroup,
}

#: Every field of :class:`Settings` in exactly one group, in declaration order
#: (``tests/unit/test_config_groups.py`` holds this to the class).
GROUPS: dict[str, tuple[str, ...]] = {name: tuple(cls.model_fields)
                                      for name, cls in GROUP_CLASSES.items()}

G = TypeVar("G", bound=SettingsGroup)


# The groups are listed last to first: pydantic orders inherited fields from the base
# furthest down the MRO, so this keeps the fields (and every listing of them) in the
# order of GROUP_CLASSES.
class Settings(WritingGroup, RetrievalGroup, LayersGroup, StoresGroup,
               EmbeddingGroup, LlmGroup, PathsGroup, BaseSettings):
    """All of memstrata's settings, flat, with the embedded offline stack as default.

    The fields come from the groups; this class reads them from the environment
    and the file and checks the combinations that span groups.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", validate_default=True, case_sensitive=False,
        frozen=False,
    )

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

    # -- groups: one concern's fields each (GROUP_CLASSES) ----------------
    def _group(self, cls: type[G]) -> G:
        """``cls`` built from this instance's (already checked) values."""
        values = {f: getattr(self, f) for f in cls.model_fields}
        # mypy binds model_construct's Self to the bound, not to G: the cast says what it is.
        return cast(G, cls.model_construct(set(values), **values))

    def group(self, name: str) -> SettingsGroup:
        """The group called ``name`` (``settings.group("retrieval")``)."""
        if name not in GROUP_CLASSES:
            raise KeyError(f"no settings group {name!r} (known: {', '.join(GROUP_CLASSES)})")
        return self._group(GROUP_CLASSES[name])

    @property
    def paths(self) -> PathsGroup:
        return self._group(PathsGroup)

    @property
    def llm(self) -> LlmGroup:
        return self._group(LlmGroup)

    @property
    def embedding(self) -> EmbeddingGroup:
        return self._group(EmbeddingGroup)

    @property
    def stores(self) -> StoresGroup:
        return self._group(StoresGroup)

    @property
    def layers(self) -> LayersGroup:
        return self._group(LayersGroup)

    @property
    def retrieval(self) -> RetrievalGroup:
        return self._group(RetrievalGroup)

    @property
    def writing(self) -> WritingGroup:
        return self._group(WritingGroup)

# -- namespaces owned by other settings classes ------------------------------
#: Entry-point group through which every settings namespace is registered.
NAMESPACE_GROUP = "memstrata.settings"

#: Variables that were renamed; the old name is still read (the new one wins).
RENAMED: dict[str, str] = {"MEMSTRATA_STREAM_APP_ID": "MEMSTRATA_KAFKA_GROUP"}

#: Where a setting's value came from, as ``memstrata config`` shows it.
Source = Literal["default", "env", "file", "argument"]

S = TypeVar("S", bound=BaseSettings)


def _prefix_of(cls: type[BaseSettings]) -> str:
    prefix = str(cls.model_config.get("env_prefix") or "").upper()
    if not prefix.startswith(ENV_PREFIX) or prefix == ENV_PREFIX:
        raise ConfigError(f"{cls.__qualname__}: env_prefix must be MEMSTRATA_<NAMESPACE>_, "
                          f"got {prefix!r}")
    return prefix


def table_of(prefix: str) -> str:
    """The TOML table of a namespace: ``MEMSTRATA_STREAM_`` -> ``stream``."""
    return prefix[len(ENV_PREFIX):].rstrip("_").lower()


def _load(target: str) -> type[BaseSettings]:
    import importlib

    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def settings_namespaces() -> tuple[dict[str, type[BaseSettings]], dict[str, str]]:
    """Every settings class that owns a ``MEMSTRATA_<NS>_`` namespace, by prefix.

    A package registers its class in its ``pyproject.toml`` (the only way)::

        [project.entry-points."memstrata.settings"]
        stream = "streams.settings:StreamSettings"

    The class is a pydantic-settings ``BaseSettings`` whose ``env_prefix`` is
    its namespace (``MEMSTRATA_STREAM_``, ``MEMSTRATA_KAFKA_``...); its module
    should import little, since every start-up loads it. Core config never
    names the services: once installed, their variables are accepted, their
    ``[table]`` of the TOML file is read, and unknown names in their
    namespace are refused like ours. Returns the classes and, for entry points
    that failed to load, why.
    """
    found, failed = _plugin_namespaces()
    return dict(found), dict(failed)


@functools.lru_cache(maxsize=1)
def _plugin_namespaces() -> tuple[dict[str, type[BaseSettings]], dict[str, str]]:
    from importlib.metadata import entry_points

    found: dict[str, type[BaseSettings]] = {}
    failed: dict[str, str] = {}
    for ep in entry_points(group=NAMESPACE_GROUP):
        try:
            cls = _load(ep.value)
            found.setdefault(_prefix_of(cls), cls)
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not hide our own errors
            failed[ep.name] = f"{ep.value}: {type(exc).__name__}: {exc}"
    return found, failed


#: Variables that were replaced and are no longer read: setting one stops start-up,
#: naming its replacement (the old service and stream limits had different
#: defaults, so carrying a value over silently could change what is accepted).
RETIRED = {
    "MEMSTRATA_SERVICE_MAX_CONTENT_CHARS": "MEMSTRATA_TURN_MAX_CONTENT_CHARS",
    "MEMSTRATA_SERVICE_MAX_LABELS": "MEMSTRATA_TURN_MAX_LABELS",
    "MEMSTRATA_STREAM_MAX_CONTENT_CHARS": "MEMSTRATA_TURN_MAX_CONTENT_CHARS",
    "MEMSTRATA_STREAM_MAX_SPEAKER_CHARS": "MEMSTRATA_TURN_MAX_SPEAKER_CHARS",
    "MEMSTRATA_STREAM_MAX_LABELS": "MEMSTRATA_TURN_MAX_LABELS",
}


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """MEMSTRATA_* variables that no settings class reads (typos, stale names)."""
    env = os.environ if environ is None else environ
    known = {ENV_PREFIX + name.upper() for name in Settings.model_fields} | set(RENAMED)
    namespaces, _ = settings_namespaces()
    for prefix, cls in namespaces.items():
        known |= {prefix + name.upper() for name in cls.model_fields}
    return sorted(k for k in env if k.upper().startswith(ENV_PREFIX) and k.upper() not in known)


# -- the loader ----------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """Every namespace's settings, built once by :func:`load_config` at an entry point.

    Entry points hand the instances down (``config.get(StreamSettings)``);
    ``sources`` says per namespace (``""`` for the core) where each field's
    value came from.
    """

    settings: Settings
    namespaces: Mapping[str, BaseSettings] = field(default_factory=dict)
    sources: Mapping[str, Mapping[str, Source]] = field(default_factory=dict)
    #: The TOML file read, if any.
    file: Path | None = None
    #: Entry points that failed to load (name -> why), for ``memstrata config``.
    failed: Mapping[str, str] = field(default_factory=dict)

    def get(self, cls: type[S]) -> S:
        """The loaded instance of ``cls`` (a class registered in the entry point group)."""
        if cls is Settings:
            return self.settings  # type: ignore[return-value]
        for ns in self.namespaces.values():
            if type(ns) is cls:
                return ns  # type: ignore[return-value]
        for ns in self.namespaces.values():
            if isinstance(ns, cls):
                return ns
        raise ConfigError(f"{cls.__module__}.{cls.__qualname__} is not a loaded settings "
                          f"namespace: register it in the {NAMESPACE_GROUP!r} entry point group "
                          f"(and reinstall the package)")


def _read_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"MEMSTRATA_CONFIG_FILE: no such file: {path}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"MEMSTRATA_CONFIG_FILE ({path}): not a readable TOML file: "
                          f"{exc}") from None


def _env_values(cls: type[BaseSettings]) -> dict[str, Any]:
    """The fields of ``cls`` set in the environment (parsed the way the class parses them)."""
    return dict(EnvSettingsSource(cls)())


def _renamed(environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """New variable -> (value, old variable) for old names set while the new one is not."""
    upper = {k.upper(): v for k, v in environ.items()}
    return {new: (upper[old], old) for old, new in RENAMED.items()
            if old in upper and new not in upper}


def _secret(cls: type[BaseSettings], name: str) -> bool:
    info = cls.model_fields.get(name)
    if info is not None and "SecretStr" in repr(info.annotation):
        return True
    return any(w in name for w in ("key", "password", "secret", "token"))


def describe_errors(exc: ValidationError, cls: type[BaseSettings],
                    where: Mapping[str, str]) -> list[str]:
    """One line per problem, ``<where the value came from>: <why> (got <value>)``.

    ``where`` maps a field to what names it for the operator (its variable,
    or the file's key); a field missing from it is named by its variable.
    Secrets are never echoed.
    """
    prefix = ENV_PREFIX if cls is Settings else _prefix_of(cls)
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p != "__root__"]
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if not loc:
            lines.append(msg)
            continue
        name = where.get(loc[0], prefix + loc[0].upper())
        value = err.get("input")
        shown = "" if _secret(cls, loc[0]) or isinstance(value, dict) else f" (got {value!r})"
        lines.append(f"{name}: {msg}{shown}")
    return lines


def _raise(lines: list[str]) -> None:
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))


@dataclass
class _Built:
    instance: BaseSettings | None
    sources: dict[str, Source]
    errors: list[str]


def _build(cls: type[BaseSettings], table: Mapping[str, Any], *, file: Path | None,
           file_label: str, arguments: Mapping[str, Any],
           renamed: Mapping[str, tuple[str, str]],
           labels: Mapping[str, str] | None = None) -> _Built:
    """Build ``cls``: arguments win over the environment, which wins over the file.

    ``labels`` names the file's keys that ``file_label`` does not (the core's
    keys written in a group's table: ``[retrieval] rrf_k``).
    """
    prefix = ENV_PREFIX if cls is Settings else _prefix_of(cls)

    def label(key: str) -> str:
        return (labels or {}).get(key) or file_label.format(key=key)

    errors = [f"{label(k)} in {file}: not a setting of {prefix}*"
              for k in table if k not in cls.model_fields and cls is not Settings]
    env = _env_values(cls)
    where: dict[str, str] = {}
    init: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for key, value in table.items():
        if key in cls.model_fields and key not in env:
            init[key] = value
            sources[key] = "file"
            where[key] = f"{label(key)} in {file}"
        elif cls is Settings and key not in cls.model_fields:
            init[key] = value  # refused below by extra="forbid", named as the file's key
            where[key] = f"{label(key)} in {file}"
    for key in env:
        sources[key] = "env"
    for key in cls.model_fields:
        if (prefix + key.upper()) in renamed and key not in env:
            value, old = renamed[prefix + key.upper()]
            init[key] = value
            sources[key] = "env"
            where[key] = old
    for key, value in arguments.items():
        init[key] = value
        sources[key] = "argument"
        where[key] = f"{prefix}{key.upper()} (given as an option)"
    try:
        instance = cls(**init)
    except ValidationError as exc:
        return _Built(None, sources, errors + describe_errors(exc, cls, where))
    for key in cls.model_fields:
        sources.setdefault(key, "default")
    return _Built(instance, sources, errors)


@dataclass
class _CoreTable:
    """The core's part of the file, flat: its keys, how each is named, what is wrong."""

    values: dict[str, Any]
    labels: dict[str, str]
    errors: list[str]


def _core_table(doc: Mapping[str, Any], tables: Collection[str], path: Path | None) -> _CoreTable:
    """The core's keys of the file: top-level ones and those of a group's table.

    ``rrf_k = 42`` and ``[retrieval]`` / ``rrf_k = 42`` set the same field;
    a key in a group's table must belong to that group, and a key may be
    given once. Tables of namespaces (``tables``) are left to their classes.
    """
    out = _CoreTable({}, {}, [])
    for key, value in doc.items():
        if not isinstance(value, dict):
            out.values[key] = value
        elif key in GROUPS and key not in tables:
            for name, item in value.items():
                where = f"[{key}] {name}"
                home = next((g for g, fields in GROUPS.items() if name in fields), None)
                if home != key:
                    out.errors.append(
                        f"{where} in {path}: not a setting of the {key} group"
                        + (f" (it is in [{home}])" if home else "")
                        + f"; its keys: {', '.join(GROUPS[key])}")
                else:
                    out.values[name] = item
                    out.labels[name] = where
        elif key not in tables:
            out.errors.append(f"[{key}] in {path}: no settings namespace {key!r} "
                              f"(known: {', '.join(sorted(tables))}; groups of the core "
                              f"settings: {', '.join(GROUPS)})")
    out.errors += [f"{name} in {path}: given twice, also as {out.labels[name]}"
                   for name, value in doc.items()
                   if not isinstance(value, dict) and name in out.labels]
    return out


def _file_path(arguments: Mapping[str, Any]) -> Path | None:
    given = arguments.get("config_file")
    if given:
        return Path(given)
    from_env = EnvSettingsSource(Settings)().get("config_file")
    return Path(from_env) if from_env else None


def _stray_lines(failed: Mapping[str, str]) -> list[str]:
    stray = unknown_variables()
    if not stray:
        return []
    lines = [f"{name}: renamed to {RETIRED[name.upper()]}" if name.upper() in RETIRED
             else f"{name}: not a memstrata setting (see `memstrata config`)" for name in stray]
    lines += [f"settings namespace {name!r} failed to load ({why})"
              for name, why in failed.items()]
    return lines


def load_config(*, namespaces: Mapping[str, Mapping[str, Any]] | None = None,
                **overrides: Any) -> Config:
    """Build the core settings and every registered namespace, once, for an entry point.

    ``overrides`` are the core's values given as arguments (``data_dir=`` from
    ``--data-dir``); ``namespaces`` holds arguments per namespace table
    (``{"service": {"port": 0}}``). Every problem in every namespace (unknown
    variables, bad values, unknown keys of the TOML file) is reported in one
    :class:`ConfigError`, each line naming the variable or the file's key.
    """
    arguments = {k: v for k, v in overrides.items() if v is not None}
    per_ns = {t: {k: v for k, v in a.items() if v is not None}
              for t, a in (namespaces or {}).items()}
    classes, failed = settings_namespaces()
    lines = _stray_lines(failed)
    path = _file_path(arguments)
    doc = _read_file(path) if path is not None else {}
    tables = {table_of(p): cls for p, cls in classes.items()}
    core_table = _core_table(doc, tables, path)
    lines += core_table.errors
    for t in per_ns:
        if t not in tables:
            raise ConfigError(f"no settings namespace {t!r} (known: {', '.join(sorted(tables))})")
    renamed = _renamed(os.environ)
    core = _build(Settings, core_table.values, file=path, file_label="{key}",
                  arguments=arguments, renamed=renamed, labels=core_table.labels)
    lines += core.errors
    built: dict[str, BaseSettings] = {}
    sources: dict[str, Mapping[str, Source]] = {"": core.sources}
    for table in sorted(tables):
        cls = tables[table]
        got = _build(cls, doc.get(table) or {}, file=path, file_label=f"[{table}] {{key}}",
                     arguments=per_ns.get(table, {}), renamed=renamed)
        lines += got.errors
        sources[table] = got.sources
        if got.instance is not None:
            built[table] = got.instance
    _raise(lines)
    assert isinstance(core.instance, Settings)
    return Config(core.instance, built, sources, path, failed)


def load_settings(**overrides: Any) -> Settings:
    """Build the core :class:`Settings` alone (file and environment), with readable errors.

    Each problem is reported as ``MEMSTRATA_<NAME>: <why>`` so an operator can
    tell at once which variable to fix. Entry points use :func:`load_config`,
    which builds every namespace; this is for tools that need the core only.
    """
    arguments = {k: v for k, v in overrides.items() if v is not None}
    classes, failed = settings_namespaces()
    _raise(_stray_lines(failed))
    path = _file_path(arguments)
    doc = _read_file(path) if path is not None else {}
    core_table = _core_table(doc, {table_of(p) for p in classes}, path)
    got = _build(Settings, core_table.values, file=path, file_label="{key}", arguments=arguments,
                 renamed={}, labels=core_table.labels)
    _raise(core_table.errors + got.errors)
    assert isinstance(got.instance, Settings)
    return got.instance


def load_namespace(cls: type[S], **overrides: Any) -> S:
    """Build one namespace (file and environment) with the same errors as :func:`load_config`.

    For entry points that need a single namespace (``python -m workers check``).
    """
    prefix = _prefix_of(cls)
    arguments = {k: v for k, v in overrides.items() if v is not None}
    path = _file_path({})
    doc = _read_file(path) if path is not None else {}
    table = table_of(prefix)
    got = _build(cls, doc.get(table) or {}, file=path, file_label=f"[{table}] {{key}}",
                 arguments=arguments, renamed=_renamed(os.environ))
    _raise(got.errors)
    assert got.instance is not None
    return got.instance  # type: ignore[return-value]


def defaults(cls: type[S]) -> S:
    """``cls`` with its documented defaults only: no environment, no file.

    For library code whose caller configured nothing (a test, an embedding
    application): what it gets does not depend on the process's variables.
    """
    return cls.model_construct()  # type: ignore[return-value]
