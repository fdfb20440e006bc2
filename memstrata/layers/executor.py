"""The in-process layer executor: builds an L1/L2 request with a local builder.

The layer seam's types (:class:`~memstrata.roles.LayerRequest`,
:class:`~memstrata.roles.LayerExecutor`) are in :mod:`memstrata.roles`, beside
the hosted memory that takes an executor; this is the default implementation,
and :func:`build_items` is shared with every other backend (``workers`` runs it
inside its Ray actors).
"""

from __future__ import annotations

from typing import Any

from memstrata.llm.types import Built, LayerBuilder
from memstrata.roles import LayerRequest

#: The layers a request may name.
LAYERS = ("L1", "L2")


def build_items(builder: LayerBuilder, request: LayerRequest) -> Built[dict[str, Any]]:
    """Run ``builder`` for the request's layer (shared by every backend)."""
    if request.layer == "L1":
        result: Built[Any] = builder.build_facts(request.meta, request.turns)
    elif request.layer == "L2":
        result = builder.build_notes(request.meta, request.turns)
    else:
        raise ValueError(f"layer: expected one of {', '.join(LAYERS)}, got {request.layer!r}")
    return Built([x.model_dump() for x in result.items], result.fallback)


class LocalLayerExecutor:
    """Builds on the caller's thread with the memory's own builder (the default)."""

    def __init__(self, builder: LayerBuilder) -> None:
        self.builder = builder

    def build_layer(self, request: LayerRequest) -> Built[dict[str, Any]]:
        return build_items(self.builder, request)
