"""L0: one thematic summary per turn, built at ingestion from sliding windows."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.layers.windowing import WindowSpan, plan_windows
from memstrata.llm.types import LayerBuilder, LLMError, Window
from memstrata.model import L0Unit, SessionMeta, Turn

LAYER = "L0"


def build_window(
    meta: SessionMeta, turns: Sequence[Turn], span: WindowSpan, builder: LayerBuilder
) -> list[L0Unit]:
    """The L0 units of one window's target turns (``span`` indexes into ``turns``).

    Each unit's id depends only on (tenant, user, session, L0, turn), so
    rebuilding a window replaces its units in every store.
    """
    window = Window(
        meta=meta,
        turns=list(turns[span.start : span.stop]),
        targets=[turns[i].index for i in span.targets()],
    )
    by_index = {t.index: t for t in window.turns}
    summaries = {s.turn_index: s for s in builder.summarize_window(window)}
    units: list[L0Unit] = []
    for idx in window.targets:
        s = summaries.get(idx)
        if s is None:
            raise LLMError(
                f"{builder.name} builder returned no L0 summary for turn {idx} "
                f"of session {meta.session_id}"
            )
        units.append(
            L0Unit(
                id=meta.record_id(LAYER, idx, idx),
                scope=meta.scope,
                session_id=meta.session_id,
                session_date=meta.session_date,
                turn_index=idx,
                summary=s.summary,
                keywords=s.keywords,
                tags=s.tags,
                source_ids=by_index[idx].source_ids,
                fallback=s.fallback,
            )
        )
    return units


def build_l0(
    meta: SessionMeta,
    turns: Sequence[Turn],
    builder: LayerBuilder,
    *,
    window_turns: int = 4,
    overlap: int = 1,
    max_chars: int = 6000,
) -> list[L0Unit]:
    """Summarise every turn of a session into an :class:`L0Unit`."""
    units: list[L0Unit] = []
    for span in plan_windows(turns, window_turns, overlap, max_chars):
        units.extend(build_window(meta, turns, span, builder))
    return units
