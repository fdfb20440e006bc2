"""``memstrata eval retrieval`` end to end on the small LongMemEval-schema fixture."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.e2e.test_cli import ROOT, run

MINI = ROOT / "tests" / "fixtures" / "longmemeval_mini.json"


def test_eval_retrieval_writes_results_plot_and_table(tmp_path: Path):
    out = tmp_path / "res.json"
    r = run("eval", "retrieval", "--dataset", str(MINI), "--format", "longmemeval",
            "--k", "1,5", "--output", str(out), data_dir=tmp_path / "unused")
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert set(res) >= {"system", "baselines", "dataset", "questions"}
    assert set(res["baselines"]) == {"bm25_raw", "dense_raw"}
    assert res["questions"] == 6
    for m in (res["system"], *res["baselines"].values()):
        for key in ("session_recall@1", "session_recall@5", "ndcg@5"):
            assert 0.0 <= m[key] <= 1.0
        assert m["session_recall@1"] <= m["session_recall@5"]
        assert "turn_recall@5" not in m  # LongMemEval has no turn-level evidence
        assert len(m["by_category"]) == 6
    assert out.with_suffix(".png").stat().st_size > 1000
    assert "bm25_raw" in r.stdout and "dense_raw" in r.stdout
    # paired comparison against each baseline, and the knobs the system ran with
    for base in ("bm25_raw", "dense_raw"):
        d = res["system_vs"][base]["session_recall@1"]
        assert d["ci95_low"] <= d["diff"] <= d["ci95_high"]
        assert d["questions"] == 6 and d["better"] + d["worse"] <= 6
        assert math.isclose(d["diff"], res["system"]["session_recall@1"]
                            - res["baselines"][base]["session_recall@1"])
    assert res["retriever"]["fusion"] == "dbsf"
    assert "system - bm25_raw session_recall@1" in r.stdout
    # the system finds every gold session of this easy fixture within 5
    assert res["system"]["session_recall@5"] >= 0.8


def test_eval_retrieval_rejects_bad_k(tmp_path: Path):
    r = run("eval", "retrieval", "--dataset", str(MINI), "--format", "longmemeval",
            "--k", "0,x", data_dir=tmp_path)
    assert r.returncode == 2 and "--k" in r.stderr
