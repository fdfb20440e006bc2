"""Search latency of the embedded stores at 10k, 100k and 1M L0 units.

Side by side, per size and tenant layout: the vector store alone (Qdrant
Edge), the lexical store alone (tantivy), the doc store's ``get_units`` for
the candidates a hybrid search fetches (SQLite), and the full hybrid retriever
(L0 BM25, dense and whole-session BM25 searches, fusion, keyword and date
boosts). The session-level BM25 index (one document per session, its units'
texts joined) is timed alone too. Layouts: every unit in one tenant/user,
or spread over 1,000 tenants with one user each (each query goes to one
random tenant). Targets at 100k units, hybrid path: p50 <= 10 ms, p99 <= 50 ms.

The hybrid path is timed with a stand-in encoder that returns a precomputed
random unit vector per query: this bench measures the stores, not MiniLM,
whose query-encoding latency is timed once on its own and printed apart.

    .venv/bin/python -m bench.search_latency [--sizes 10000,100000,1000000]

Each (size, layout) builds its data in its own process (so peak RSS is its
own): random 384-d unit vectors, texts of 10-25 words plus 5 keywords drawn
from the LoCoMo vocabulary at its own (Zipf-like) word frequencies, batched
upserts, then one flush() (which builds the Qdrant HNSW index) before timing.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import locomo_default, require_dataset
from bench._common import (
    OUT_DIR,
    Reporter,
    Result,
    console,
    load_average,
    percentiles_ms,
    print_table,
    progress,
    run_isolated,
    setup_matplotlib,
    time_calls,
    timed,
    verdict,
    worker_main,
)
from memstrata.embed.types import Embedder

MODULE = "bench.search_latency"
DEFAULT_DATASET = locomo_default()  # LOCOMO_PATH
DIM = 384
TENANTS = 1000
UNITS_PER_SESSION = 20
BATCH = 5000
LAYOUTS = {"one": "1 tenant", "spread": f"{TENANTS:,} tenants"}
COMPONENTS = {
    "vector": "vector (Qdrant Edge)",
    "lexical": "lexical (tantivy)",
    "docs": "docs get_units (SQLite)",
    "sessions": "sessions (tantivy, whole sessions)",
    "hybrid_l0": "hybrid, no session BM25 (before)",
    "hybrid": "hybrid (stores+fusion)",
}
TARGET_SIZE, TARGET_P50_MS, TARGET_P99_MS = 100_000, 10.0, 50.0


class PrecomputedEmbedder(Embedder):
    """Stand-in encoder: each query's precomputed random unit vector, no model.

    Lets the hybrid retriever run its real store and fusion code while the
    timing leaves MiniLM out (its latency is measured separately).
    """

    name = "precomputed-random"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self._vectors = vectors

    @property
    def dim(self) -> int:
        return DIM

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts])


def _vocabulary(dataset: Path) -> tuple[list[str], np.ndarray]:
    """LoCoMo message words and their relative frequencies (a natural Zipf curve)."""
    from memstrata.ingest.formats import read_file

    counts = collections.Counter(
        w
        for s in read_file(dataset).sessions
        for t in s.turns
        for m in t.messages
        for w in re.findall(r"[a-z]+(?:'[a-z]+)?", m.content.lower())
    )
    words = sorted(counts, key=lambda w: (-counts[w], w))
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum()


def _texts(rng: np.random.Generator, words: list[str], probs: np.ndarray, n: int,
           lo: int, hi: int) -> list[str]:
    lengths = rng.integers(lo, hi + 1, n)
    picks = rng.choice(len(words), size=int(lengths.sum()), p=probs)
    out, at = [], 0
    for k in lengths:
        out.append(" ".join(words[j] for j in picks[at : at + k]))
        at += k
    return out


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def _disk_mb(path: Path) -> float:
    """Allocated (not apparent) size: Qdrant preallocates sparse mmap files."""
    files = path.rglob("*") if path.is_dir() else [path]
    return sum(f.stat().st_blocks * 512 for f in files if f.is_file()) / 2**20


def _build_and_time(cfg: Result, report: Reporter) -> Result:
    """Build one (size, layout) in a temporary data dir, then time each component."""
    from memstrata.ids import record_id
    from memstrata.model import L0Unit, Message, Scope, Turn
    from memstrata.retrieval.hybrid import HybridRetriever, RetrievalParams
    from memstrata.store.qdrant_edge import QdrantEdgeVectorStore
    from memstrata.store.sqlite_docs import SqliteDocStore
    from memstrata.store.tantivy_store import TantivyLexicalStore
    from memstrata.store.types import LexicalDoc, VectorRecord

    size, layout = int(cfg["size"]), str(cfg["layout"])
    rng = np.random.default_rng(cfg["seed"])
    words, probs = _vocabulary(Path(cfg["dataset"]))
    content = np.array([len(w) >= 4 for w in words])
    kw_words = [w for w, c in zip(words, content) if c]
    kw_probs = probs[content] / probs[content].sum()
    n_tenants = TENANTS if layout == "spread" else 1
    scopes = [Scope(tenant_id=f"t{t:04d}", user_id=f"u{t:04d}") for t in range(n_tenants)]
    res: Result = {"size": size, "layout": layout, "load_avg_start": load_average()}
    build: dict[str, float] = {}

    with tempfile.TemporaryDirectory(prefix="memstrata-search-", dir=cfg.get("tmp")) as tmp:
        root = Path(tmp)
        vectors = QdrantEdgeVectorStore(root / "vectors", DIM)
        lexical = TantivyLexicalStore(root / "lexical")
        session_lexical = TantivyLexicalStore(root / "session-lexical")
        docs = SqliteDocStore(root / "docs.sqlite3")
        # Per session: its units' texts, written at the end as raw turns and as
        # one session-level BM25 document (sessions span batches when spread).
        session_texts: dict[tuple[Scope, str], list[str]] = collections.defaultdict(list)
        with progress() as bar:
            task = bar.add_task(f"build {size:,} units, {LAYOUTS[layout]}", total=size)
            for start in range(0, size, BATCH):
                n = min(BATCH, size - start)
                with timed(build, "generate"):
                    units: list[L0Unit] = []
                    for i, text, kws in zip(range(start, start + n),
                                            _texts(rng, words, probs, n, 10, 25),
                                            _texts(rng, kw_words, kw_probs, n, 5, 5)):
                        scope = scopes[i % n_tenants]
                        j = i // n_tenants
                        session, turn = f"s{j // UNITS_PER_SESSION:05d}", j % UNITS_PER_SESSION + 1
                        units.append(L0Unit(
                            id=record_id(scope.tenant_id, scope.user_id, session, "L0", turn, turn),
                            scope=scope, session_id=session, turn_index=turn, summary=text,
                            keywords=kws.split()))
                    lex = [LexicalDoc(id=u.id, scope=u.scope, session_id=u.session_id,
                                      turn_index=u.turn_index, text=u.summary,
                                      keywords=u.keywords) for u in units]
                    vecs = [VectorRecord(id=u.id, scope=u.scope, session_id=u.session_id,
                                         turn_index=u.turn_index, vector=v)
                            for u, v in zip(units, _unit_vectors(rng, n))]
                for u in units:
                    session_texts[(u.scope, u.session_id)].append(u.summary)
                with timed(build, "docs"):
                    docs.put_units(units)
                with timed(build, "lexical"):
                    lexical.upsert(lex)
                with timed(build, "vector"):
                    vectors.upsert(vecs)
                bar.advance(task, n)
                if (start + n) % 100_000 == 0:  # logs only show the bar when it ends
                    report({**res, "build_s": dict(build), "built": start + n})
                    console.log(f"{start + n:,} units written")
        items = list(session_texts.items())
        for start in range(0, len(items), BATCH // UNITS_PER_SESSION):
            chunk = items[start: start + BATCH // UNITS_PER_SESSION]
            with timed(build, "docs"):
                for (scope, sid), texts in chunk:
                    docs.put_turns(scope, sid, [
                        Turn(index=i, messages=[Message(role="user", content=t)])
                        for i, t in enumerate(texts, start=1)])
            with timed(build, "sessions"):
                session_lexical.upsert([
                    LexicalDoc(id=record_id(scope.tenant_id, scope.user_id, sid, "session", 0, 0),
                               scope=scope, session_id=sid, turn_index=0,
                               text="\n".join(texts))
                    for (scope, sid), texts in chunk])
        session_texts.clear()
        res["built"] = size
        report({**res, "build_s": dict(build)})
        console.log(f"flush: optimising the Qdrant Edge index over {size:,} points ...")
        with timed(build, "docs"):
            docs.flush()
        with timed(build, "lexical"):
            lexical.flush()
        with timed(build, "optimize"):
            vectors.flush()
        build["vector"] += build["optimize"]
        info = vectors._shard.info()  # private: segment counts are diagnostics only
        res.update({
            "build_s": build,
            "qdrant_segments": info.segments_count,
            "qdrant_indexed": info.indexed_vectors_count,
            "tantivy_segments": lexical._index.searcher().num_segments,
            "disk_mb": {"vector": round(_disk_mb(root / "vectors")),
                        "lexical": round(_disk_mb(root / "lexical")),
                        "sessions": round(_disk_mb(root / "session-lexical")),
                        "docs": round(sum(_disk_mb(p) for p in root.glob("docs.sqlite3*")))},
        })
        console.log(f"built in {sum(build.values()) - build['optimize']:.0f}s: "
                    + ", ".join(f"{k} {v:.1f}s" for k, v in build.items())
                    + " (vector includes optimize)")
        report(res)

        nq, warm = int(cfg["queries"]), int(cfg["warmup"])
        texts = _texts(rng, words, probs, nq + warm, 3, 8)
        qvec = dict(zip(texts, _unit_vectors(rng, nq + warm)))
        qscope = [scopes[int(t)] for t in rng.integers(0, n_tenants, nq + warm)]
        retriever = HybridRetriever(PrecomputedEmbedder(qvec), vectors, lexical, docs,
                                    RetrievalParams(), session_lexical=session_lexical)
        # The same retriever without the session-level index: the previous default path.
        before = HybridRetriever(PrecomputedEmbedder(qvec), vectors, lexical, docs,
                                 RetrievalParams())
        limit = retriever.params.candidate_units
        cand: list[set[str]] = [set() for _ in texts]

        def vector(i: int) -> None:
            cand[i].update(h.unit_id for h in vectors.search(qscope[i], qvec[texts[i]], limit))

        def lexical_(i: int) -> None:
            cand[i].update(h.unit_id for h in lexical.search(qscope[i], texts[i], limit))

        def docs_(i: int) -> None:
            docs.get_units(qscope[i], list(cand[i]))

        def sessions(i: int) -> None:
            session_lexical.search(qscope[i], texts[i], retriever.params.session_candidates)

        def hybrid_l0(i: int) -> None:
            before.search(qscope[i], [texts[i]])

        def hybrid(i: int) -> None:
            retriever.search(qscope[i], [texts[i]])

        lat: dict[str, Any] = {}
        for key, fn in (("vector", vector), ("lexical", lexical_), ("docs", docs_),
                        ("sessions", sessions), ("hybrid_l0", hybrid_l0), ("hybrid", hybrid)):
            samples = time_calls(fn, nq, warm, f"{COMPONENTS[key]} x{nq}")
            p50, p99 = percentiles_ms(samples)
            lat[key] = {"p50_ms": p50, "p99_ms": p99, "mean_ms": 1000 * float(np.mean(samples))}
            res["latency"] = lat
            report(res)
        res["candidates_mean"] = float(np.mean([len(c) for c in cand[warm:]]))
        res["load_avg_end"] = load_average()
        for store in (vectors, lexical, session_lexical, docs):
            store.close()
    return res


def _encoder_latency(cfg: Result, report: Reporter) -> Result:
    """Real MiniLM query encoding, one query per call, after warm-up."""
    from memstrata.embed.minilm import MiniLMEmbedder

    rng = np.random.default_rng(cfg["seed"])
    words, probs = _vocabulary(Path(cfg["dataset"]))
    texts = _texts(rng, words, probs, int(cfg["queries"]) + int(cfg["warmup"]), 3, 8)
    embedder = MiniLMEmbedder()
    samples = time_calls(lambda i: embedder.embed_query(texts[i]), int(cfg["queries"]),
                         int(cfg["warmup"]), "MiniLM embed_query")
    p50, p99 = percentiles_ms(samples)
    return {"p50_ms": p50, "p99_ms": p99, "load_avg": load_average()}


def _work(cfg: Result, report: Reporter) -> Result:
    if cfg["kind"] == "encoder":
        return _encoder_latency(cfg, report)
    return _build_and_time(cfg, report)


def _plot(results: Sequence[Result], path: Path) -> None:
    plt = setup_matplotlib()
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    colors = dict(zip(COMPONENTS, ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                   "#d62728")))
    for ax, layout in zip(axes, LAYOUTS):
        rows = sorted((r for r in results if r["layout"] == layout and "latency" in r),
                      key=lambda r: r["size"])
        for key, label in COMPONENTS.items():
            pts = [(r["size"], r["latency"][key]) for r in rows if key in r["latency"]]
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1]["p50_ms"] for p in pts], "-o", color=colors[key],
                    label=f"{label} p50")
            ax.plot(xs, [p[1]["p99_ms"] for p in pts], "--o", color=colors[key],
                    label=f"{label} p99")
        ax.axhline(TARGET_P50_MS, color="grey", ls=":", lw=1)
        ax.axhline(TARGET_P99_MS, color="grey", ls="-.", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("L0 units in the store")
        ax.set_title(f"{LAYOUTS[layout]} (query one {'tenant' if layout == 'spread' else 'scope'})")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency, ms (p50 solid, p99 dashed)")
    axes[1].legend(fontsize=7, loc="upper left")
    fig.suptitle("Embedded store search latency (hybrid: precomputed query vector, no encoder;"
                 " dotted 10 ms / dash-dot 50 ms = targets at 100k)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _report(results: Sequence[Result], enc: Result, queries: int, warmup: int) -> None:
    """Table, build details, PASS/FAIL lines and the plot for whatever was measured."""
    nan = float("nan")
    rows = []
    for r in results:
        b = r.get("build_s", {})
        stores = sum(v for k, v in b.items() if k not in ("generate", "optimize"))
        built = f"{r.get('built', 0):,}"
        if r.get("built") != r["size"] or "latency" not in r:
            built += f" of {r['size']:,} (stopped)"
        for key, label in COMPONENTS.items():
            lat = r.get("latency", {}).get(key, {})
            rows.append([built, LAYOUTS[r["layout"]], label, lat.get("p50_ms", nan),
                         lat.get("p99_ms", nan), stores if key == "hybrid" else b.get(key, nan),
                         r.get("peak_rss_mb", nan)])
    print_table(f"Search latency, {queries} queries after {warmup} warm-ups "
                "(hybrid = stores + fusion with a precomputed random query vector, no encoder)",
                ["units", "layout", "component", "p50 ms", "p99 ms", "build s", "peak RSS MB"],
                rows)
    if "p50_ms" in enc:
        console.print(f"MiniLM query encoding (real model, one query): p50 {enc['p50_ms']:.2f} ms,"
                      f" p99 {enc['p99_ms']:.2f} ms -- add to the hybrid row for end-to-end")
    for r in results:
        b = r.get("build_s", {})
        console.print(f"{r['size']:,}/{r['layout']}: build s " + ", ".join(
            f"{k} {v:.1f}" for k, v in b.items()) + " (vector includes optimize); "
            f"disk MB {r.get('disk_mb')}; segments qdrant {r.get('qdrant_segments')}, "
            f"tantivy {r.get('tantivy_segments')}; load avg {r.get('load_avg_start', nan):.1f}"
            f" -> {r.get('load_avg_end', nan):.1f}")
    for r in results:
        if r["size"] == TARGET_SIZE and "hybrid" in r.get("latency", {}):
            h = r["latency"]["hybrid"]
            ok = h["p50_ms"] <= TARGET_P50_MS and h["p99_ms"] <= TARGET_P99_MS
            console.print(f"target @100k, {LAYOUTS[r['layout']]}, hybrid: p50 {h['p50_ms']:.2f} ms"
                          f" (<= {TARGET_P50_MS:.0f}), p99 {h['p99_ms']:.2f} ms "
                          f"(<= {TARGET_P99_MS:.0f}): {verdict(ok)}")
    png = OUT_DIR / "search_latency.png"
    _plot(results, png)
    console.print(f"plot: {png}; raw numbers: {OUT_DIR / 'search_latency.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="comma-separated unit counts (empty: only report --merge)")
    parser.add_argument("--layouts", default="one,spread", help="one, spread or both")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET,
                        help="where the vocabulary comes from")
    parser.add_argument("--tmp", default=None, help="folder for the temporary stores")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--merge", type=Path, action="append", default=[],
                        help="earlier search_latency.json whose other configs join the report")
    args = parser.parse_args()
    args.dataset = require_dataset(args.dataset)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    layouts = [x for x in args.layouts.split(",") if x]
    base = {"dataset": str(args.dataset), "queries": args.queries, "warmup": args.warmup,
            "seed": args.seed, "tmp": args.tmp}
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    earlier: list[Result] = []
    enc: Result = {}
    for path in args.merge:
        saved = json.loads(path.read_text())
        earlier += saved["configs"]
        enc = enc or saved.get("encoder", {})

    if sizes:
        console.rule("MiniLM query encoding (real model, measured apart)")
        enc = run_isolated(MODULE, {**base, "kind": "encoder"})
    results: list[Result] = []
    for size in sizes:
        for layout in layouts:
            console.rule(f"{size:,} units, {LAYOUTS[layout]}")
            r = run_isolated(MODULE, {**base, "kind": "build", "size": size, "layout": layout})
            if r["exit_code"] != 0:
                console.print(f"[red]{size:,}/{layout} stopped (exit {r['exit_code']}); "
                              f"partial numbers kept: built {r.get('built', 0):,} units")
            results.append(r)
            (OUT_DIR / "search_latency.json").write_text(
                json.dumps({"encoder": enc, "configs": results}, indent=1))
    done = {(r["size"], r["layout"]) for r in results}
    results = sorted([*(r for r in earlier if (r["size"], r["layout"]) not in done), *results],
                     key=lambda r: (r["size"], r["layout"]))
    (OUT_DIR / "search_latency.json").write_text(
        json.dumps({"encoder": enc, "configs": results}, indent=1))
    _report(results, enc, args.queries, args.warmup)


if __name__ == "__main__":
    if not worker_main(_work):
        main()
