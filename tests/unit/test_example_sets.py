"""The committed LongMemEval-schema example sets are exactly what their generators write."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str):
    sys.path.insert(0, str(EXAMPLES))  # the holdout generator imports the dev one
    try:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.mark.parametrize(("generator", "output"), [
    ("make_longmemeval_dev", "longmemeval_dev.json"),
    ("make_longmemeval_holdout", "longmemeval_holdout.json"),
])
def test_generator_reproduces_the_committed_file(generator: str, output: str):
    dumps = _load("make_longmemeval_dev").dumps
    module = _load(generator)
    assert dumps(module.build()) == (EXAMPLES / output).read_text(encoding="utf-8")


def test_holdout_and_dev_share_no_question_or_evidence_session():
    dev, holdout = _load("make_longmemeval_dev"), _load("make_longmemeval_holdout")
    d, h = dev.build(), holdout.build()
    assert not {r["question_id"] for r in d} & {r["question_id"] for r in h}
    dev_evidence = {s for r in d for s in r["answer_session_ids"]}
    assert not dev_evidence & {s for r in h for s in r["answer_session_ids"]}
