"""Generate memstrata's Grafana dashboards with grafana-foundation-sdk.

    python infra/grafana/generate.py            # rewrite infra/grafana/dashboards/*.json
    python infra/grafana/generate.py --check    # exit 1 when the committed JSON is stale

The dashboards are code so that every query is reviewed with the metrics it
reads; tests/deploy checks that each query parses and names only metrics the
services export (or rules in infra/prometheus/rules record).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders.bargauge import Panel as BarGauge
from grafana_foundation_sdk.builders.dashboard import Dashboard, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery as Query
from grafana_foundation_sdk.builders.stat import Panel as Stat
from grafana_foundation_sdk.builders.timeseries import Panel as Timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).resolve().parent / "dashboards"
DS = DataSourceRef(type_val="prometheus", uid="prometheus")
RI = "$__rate_interval"


def q(expr: str, legend: str = "", ref: str = "A") -> Query:
    return Query().expr(expr).legend_format(legend or "__auto").ref_id(ref).datasource(DS)


def ts(title: str, unit: str, *targets: Query, desc: str = "",
       w: int = 12, h: int = 8) -> Timeseries:
    panel = Timeseries().title(title).description(desc).unit(unit).datasource(DS).span(w).height(h)
    for t in targets:
        panel = panel.with_target(t)
    return panel


def quantiles(metric: str, by: str, unit: str, title: str, desc: str) -> Timeseries:
    grouping = f"{by}, le" if by else "le"
    targets = [q(f"histogram_quantile({p / 100}, sum by ({grouping}) "
                 f"(rate({metric}_bucket[{RI}])))",
                 f"p{p} {{{{{by}}}}}" if by else f"p{p}", ref)
               for p, ref in ((50, "A"), (95, "B"), (99, "C"))]
    return ts(title, unit, *targets, desc=desc)


def overview() -> Dashboard:
    """The main dashboard: how deep answers read, what they cost, how calls and ingest fare."""
    d = (Dashboard("memstrata")
         .uid("memstrata-overview")
         .description("Progressive disclosure depth, LLM cost, gRPC latency and errors, "
                      "stream ingestion and the L1/L2 materializers.")
         .tags(["memstrata", "generated"])
         .refresh("30s")
         .time("now-1h", "now")
         .timezone("browser"))

    d = d.with_row(Row("Answers: how deep they read"))
    d = d.with_panel(
        BarGauge().title("Answer depth distribution").datasource(DS).unit("percentunit")
        .description("Share of answers whose deepest read was at most L0 (summaries), L1 "
                     "(key facts), L2 (turn notes) or L3 (raw turns), over the time range.")
        .min(0).max(1).span(8).height(8)
        .with_target(q(
            "sum by (le) (increase(memstrata_answer_depth_bucket{le!=\"+Inf\"}[$__range]))"
            " / ignoring (le) group_left sum(increase(memstrata_answer_depth_count[$__range]))",
            "depth <= L{{le}}").instant()))
    d = d.with_panel(quantiles(
        "memstrata_answer_drilled_share", "", "percentunit", "Share of sessions drilled",
        "Of the user's sessions, the share an answer read beyond L0 (selectivity).").span(8))
    d = d.with_panel(quantiles(
        "memstrata_answer_steps", "", "short", "Controller steps per answer",
        "Tool calls of the progressive disclosure controller per answer.").span(8))
    d = d.with_panel(ts(
        "Reads by layer", "ops",
        q(f"sum by (layer) (rate(memstrata_layer_reads_total[{RI}]))", "{{layer}}"),
        desc="Controller reads per second by layer."))
    d = d.with_panel(ts(
        "Answers per second", "reqps",
        q(f"sum(rate(memstrata_answer_steps_count[{RI}]))", "answers"),
        q(f"sum(rate(memstrata_budget_fallbacks_total[{RI}]))", "offline (budget spent)", "B"),
        desc="Answers served, and those answered offline because the LLM budget ran out."))

    d = d.with_row(Row("LLM tokens and cost"))
    d = d.with_panel(ts(
        "Tokens by role", "short",
        q(f"sum by (role, direction) (rate(memstrata_llm_tokens_total[{RI}]))",
          "{{role}} {{direction}}"),
        q(f"sum(rate(memstrata_memory_tokens_read_total[{RI}]))", "memory read", "B"),
        desc="LLM tokens per second by role (builder, controller, synthesizer, generator)."))
    d = d.with_panel(ts(
        "Cost per hour by model", "currencyUSD",
        q("sum by (model) (rate(memstrata_llm_cost_usd_total[" + RI + "])) * 3600", "{{model}}"),
        desc="LLM spend rate in USD per hour, by model."))
    d = d.with_panel(Stat().title("Spend in range").datasource(DS).unit("currencyUSD")
                     .span(6).height(4)
                     .with_target(q("sum(increase(memstrata_llm_cost_usd_total[$__range]))",
                                    "USD").instant()))
    d = d.with_panel(Stat().title("LLM calls in range").datasource(DS).unit("short")
                     .span(6).height(4)
                     .with_target(q("sum(increase(memstrata_llm_calls_total[$__range]))",
                                    "calls").instant()))

    d = d.with_row(Row("gRPC service"))
    d = d.with_panel(quantiles(
        "memstrata_rpc_latency_seconds", "method", "s", "Latency by method",
        "p50 / p95 / p99 call latency per gRPC method."))
    d = d.with_panel(ts(
        "Errors by code", "reqps",
        q(f"sum by (method, code) (rate(memstrata_rpc_errors_total[{RI}]))",
          "{{method}} {{code}}"),
        q(f"sum by (method, limit) (rate(memstrata_rpc_rate_limited_total[{RI}]))",
          "{{method}} limited: {{limit}}", "B"),
        desc="Calls that ended with a non-OK status, and calls refused by a tenant limit."))
    d = d.with_panel(ts(
        "Calls per second", "reqps",
        q(f"sum by (method) (rate(memstrata_rpc_latency_seconds_count[{RI}]))", "{{method}}"),
        desc="Calls per second by method."))
    d = d.with_panel(ts(
        "In flight", "short", q("sum by (method) (memstrata_rpc_in_flight)", "{{method}}"),
        desc="Calls being served now."))
    d = d.with_panel(ts(
        "Process caches", "short",
        q("sum by (cache) (memstrata_process_cache_entries)", "held: {{cache}}"),
        q("sum by (cache) (memstrata_process_cache_bound_entries)", "bound: {{cache}}", "B"),
        desc="Entries the text (memo) and unit caches of each process hold, against their "
             "bound (MEMSTRATA_CACHE_MAX_ENTRIES caps each cache). Resident memory that "
             "keeps rising while these sit at their bound is something else."))

    d = d.with_row(Row("Scheduling: fair shares and load shedding"))
    d = d.with_panel(quantiles(
        "memstrata_queue_wait_seconds", "method", "s", "Queue wait by method",
        "From asking for a read or answer thread to the work starting (the fair scheduler's "
        "per-tenant queues).").span(8))
    d = d.with_panel(ts(
        "Shed calls by reason", "reqps",
        q(f"sum by (method, reason) (rate(memstrata_shed_calls_total[{RI}]))",
          "{{method}} {{reason}}"),
        desc="Calls refused with RESOURCE_EXHAUSTED and retry-after-ms: the wait would pass "
             "the deadline or MEMSTRATA_SERVICE_QUEUE_MAX_WAIT_S, or the queue was full.",
        w=8))
    d = d.with_panel(ts(
        "Concurrency limit and queued calls", "short",
        q("sum by (pool) (memstrata_concurrency_limit)", "limit: {{pool}}"),
        q("sum by (pool) (memstrata_queued_calls)", "queued: {{pool}}", "B"),
        desc="The adaptive limit of each pool (cut when latency rises) and the calls waiting.",
        w=8))

    d = d.with_row(Row("Stream ingestion"))
    d = d.with_panel(ts(
        "Ingest rate", "ops",
        q(f"sum by (topic) (rate(memstrata_stream_events_in_total[{RI}]))", "{{topic}}"),
        q(f"sum(rate(memstrata_stream_turns_indexed_total[{RI}]))", "turns indexed", "B"),
        q(f"sum by (kind) (rate(memstrata_stream_units_indexed_total[{RI}]))",
          "L0 units ({{kind}})", "C"),
        desc="Events read per topic, and turns and L0 units written to the stores."))
    d = d.with_panel(quantiles(
        "memstrata_stream_freshness_seconds", "", "s", "Freshness",
        "Producer event time to searchable, per turn event."))
    d = d.with_panel(ts(
        "Consumer lag", "short",
        q("sum by (topic) (memstrata_stream_consumer_lag)", "{{topic}}"),
        desc="Records not yet read by the stream workers' consumer group."))
    d = d.with_panel(ts(
        "Dead letters by reason", "ops",
        q(f"sum by (reason) (rate(memstrata_stream_dlq_events_total[{RI}]))", "{{reason}}"),
        desc="Events refused by validation and sent to memstrata.dlq.v1."))

    d = d.with_row(Row("L1/L2 materializers (Ray workers)"))
    d = d.with_panel(ts(
        "Cache hit ratio", "percentunit",
        q(f"sum(rate(memstrata_workers_cache_total{{result=\"hit\"}}[{RI}]))"
          f" / sum(rate(memstrata_workers_cache_total[{RI}]))", "L1/L2 reads from cache"),
        desc="Share of L1/L2 layer reads served from the cache instead of being built."))
    d = d.with_panel(ts(
        "Queue depth and failures", "short",
        q("sum by (pool) (memstrata_workers_queue_depth)", "queued: {{pool}}"),
        q(f"sum by (layer, outcome) (rate(memstrata_workers_builds_total"
          f"{{outcome=~\"failed|timeout\"}}[{RI}]))", "{{layer}} {{outcome}}/s", "B"),
        desc="Requests waiting on the Ray workers, and builds that failed or timed out."))
    return d


DASHBOARDS = {"memstrata-overview.json": overview}


def render() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    enc = JSONEncoder(sort_keys=True, indent=2)
    return {name: enc.encode(build().build()) + "\n" for name, build in DASHBOARDS.items()}


def queries(text: str) -> list[str]:
    """Every PromQL expression of a dashboard's JSON."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                found.append(node["expr"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(text))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when committed JSON is stale")
    args = ap.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = OUT / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print("stale dashboards (run python infra/grafana/generate.py): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
