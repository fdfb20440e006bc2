"""Dependencies flow one way: evidence below synth below controller.

Each check runs in a fresh interpreter, so modules imported by other tests
cannot hide a stray import.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

_CHECK = """
import importlib, sys
importlib.import_module({module!r})
bad = sorted(m for m in sys.modules if m.startswith({forbidden!r}))
print(",".join(bad))
"""


@pytest.mark.parametrize(("module", "forbidden"), [
    ("memstrata.evidence.relevance", ("memstrata.controller", "memstrata.synth")),
    ("memstrata.evidence.extract", ("memstrata.controller", "memstrata.synth")),
    ("memstrata.evidence.llm_calls", ("memstrata.controller", "memstrata.synth")),
    ("memstrata.synth.answer", ("memstrata.controller",)),
    ("memstrata.synth.notes", ("memstrata.controller",)),
    ("memstrata.controller", ("memstrata.memory",)),  # the reader protocol is enough
])
def test_module_does_not_import(module: str, forbidden: tuple[str, ...]):
    out = subprocess.run([sys.executable, "-c", _CHECK.format(module=module,
                                                              forbidden=forbidden)],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"{module} imports {out}"


def test_controller_package_exports_without_lazy_loading():
    import memstrata.controller as c

    assert c.Controller.__module__ == "memstrata.controller.run"
    assert not hasattr(c, "__getattr__")
