"""The progressive disclosure controller (APDMem §3.2): answer from coarse memory first.

``Controller(memory).answer(scope, question, asked_on)`` searches the L0 index,
reads key facts (L1), turn notes (L2) and raw turns (L3) only as far as the
question needs, organizes the evidence into notes and answers, with a trace
of every step and what it cost.

The names below are loaded on first use, so that :mod:`memstrata.synth` can
import the controller's small helper modules without a circular import.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ABLATIONS": "memstrata.controller.config",
    "ControllerSettings": "memstrata.controller.config",
    "load_controller_settings": "memstrata.controller.config",
    "Answer": "memstrata.controller.result",
    "SourceRef": "memstrata.controller.result",
    "Controller": "memstrata.controller.run",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'memstrata.controller' has no attribute {name!r}")
