"""The soak bench's pure helpers: trend slopes, the FLAT verdict, process discovery, metrics."""

from __future__ import annotations

import math

import pytest

from bench.soak import (
    descendants,
    latency_trend,
    log_warnings,
    metric_sums,
    parse_args,
    process_kind,
    rss_trend,
    second_half,
    theil_sen,
)


def test_theil_sen_recovers_a_line_and_ignores_one_spike() -> None:
    xs = [float(i) for i in range(9)]
    line = [100 + 0.5 * x for x in xs]
    assert theil_sen(xs, line) == pytest.approx(0.5)
    spiked = list(line)
    spiked[4] += 80  # one allocator spike in one sample
    assert theil_sen(xs, spiked) == pytest.approx(0.5)


def test_theil_sen_without_distinct_x_is_nan_and_lengths_must_match() -> None:
    assert math.isnan(theil_sen([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="differ in length"):
        theil_sen([1.0, 2.0], [1.0])


def test_second_half_keeps_at_least_two_samples() -> None:
    assert second_half(10) == slice(5, 10)
    assert second_half(3) == slice(1, 3)
    assert second_half(2) == slice(0, 2)
    with pytest.raises(ValueError, match="at least 2"):
        second_half(1)


def test_rss_trend_judges_only_the_second_half() -> None:
    t = [15.0 * i for i in range(10)]
    msgs = [1000.0 * i for i in range(10)]
    warmup_then_flat = [50, 120, 180, 200, 200, 201, 200, 200, 201, 200]
    trend = rss_trend(t, msgs, warmup_then_flat, tol_per_10k=2.0, tol_per_min=2.0)
    assert trend.flat
    assert abs(trend.per_min) < 1


def test_rss_trend_flags_growth_per_message_and_per_minute() -> None:
    t = [15.0 * i for i in range(10)]
    msgs = [1000.0 * i for i in range(10)]
    leak = [100 + 2.2 * m / 1000 for m in msgs]  # 2.2 KB per message: 22 MB per 10k
    trend = rss_trend(t, msgs, leak, tol_per_10k=2.0, tol_per_min=100.0)
    assert trend.per_10k_msgs == pytest.approx(22.0)
    assert not trend.flat
    idle_growth = [100 + 0.1 * s for s in t]  # 6 MB a minute with no messages at all
    quiet = rss_trend(t, [0.0] * 10, idle_growth, tol_per_10k=2.0, tol_per_min=2.0)
    assert math.isnan(quiet.per_10k_msgs)
    assert quiet.per_min == pytest.approx(6.0)
    assert not quiet.flat


def test_rss_trend_falling_memory_is_flat() -> None:
    t = [10.0 * i for i in range(6)]
    assert rss_trend(t, t, [300, 290, 280, 270, 260, 250], 1.0, 1.0).flat


def _calls(p99_ms: float, n: int = 100) -> list[float]:
    """``n`` call latencies (s) of 20 ms, the worst two at ``p99_ms``."""
    return [0.02] * (n - 2) + [p99_ms / 1000] * 2


def test_latency_trend_pools_each_half_of_the_window() -> None:
    warmup = [_calls(900)] * 4  # the first half of the run is not judged
    steady = latency_trend(warmup + [_calls(150)] * 4, tol=0.5)
    assert steady.flat
    assert steady.ratio == pytest.approx(1.0)
    worse = latency_trend(warmup + [_calls(150)] * 2 + [_calls(400)] * 2, tol=0.5)
    assert worse.late_p99_ms > 2 * worse.early_p99_ms
    assert not worse.flat


def test_latency_trend_one_slow_interval_does_not_make_a_trend() -> None:
    # One interval's p99 of 600 ms (its two worst calls) among the 300 calls of the later half.
    later = [_calls(150), _calls(600), _calls(150), _calls(150)]
    assert latency_trend([_calls(150)] * 8 + later, tol=0.5).flat


def test_latency_trend_without_calls_is_not_flat() -> None:
    assert not latency_trend([[] for _ in range(8)], tol=0.5).flat


def test_descendants_follow_the_parent_chain_only() -> None:
    parents = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
    assert descendants(parents, 10) == [11, 12, 13]
    assert descendants(parents, 12) == []


def test_process_kind_tells_the_gate_from_tansu() -> None:
    gate = ["/venv/bin/python", "-m", "streams.broker_gate", "--tansu", "/opt/bin/tansu"]
    assert process_kind(gate) == "gate"
    assert process_kind(["/opt/bin/tansu", "broker", "--listener-url", "tcp://x"]) == "tansu"
    assert process_kind(["/usr/bin/python3", "-c", "pass"]) == "other"
    assert process_kind([]) == "other"


def test_metric_sums_add_labelled_samples_of_matching_names() -> None:
    text = "\n".join([
        "# HELP memstrata_stream_open_sessions Sessions open",
        "# TYPE memstrata_stream_open_sessions gauge",
        'memstrata_stream_open_sessions{partition="0"} 3.0',
        'memstrata_stream_open_sessions{partition="1"} 4.0',
        "memstrata_rpc_in_flight 2.0",
        "memstrata_service_pending_writes 17",
    ])
    assert metric_sums(text, ["open_sessions", "pending"]) == {
        "memstrata_stream_open_sessions": 7.0, "memstrata_service_pending_writes": 17.0}


@pytest.mark.parametrize("argv, message", [
    (["--minutes", "500"], "--minutes must be within 0.5..120"),
    (["--writers", "0"], "--writers must be within 1..64"),
    (["--close-share", "0.8", "--delete-session-share", "0.5"], "at most 1"),
    (["--minutes", "1", "--interval", "30"], "fewer than 4 samples"),
    (["--cache-max-entries", "-3"], "--cache-max-entries must be within 0..1000000"),
])
def test_bad_arguments_name_the_flag_and_the_limit(argv: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_cache_cap_reaches_serve_as_a_setting_it_knows() -> None:
    from bench.soak import serve_env

    env, unknown = serve_env(parse_args(["--cache-max-entries", "512"]), 9100)
    assert env["MEMSTRATA_CACHE_MAX_ENTRIES"] == "512" and unknown == []
    env, _ = serve_env(parse_args([]), 9100)
    assert "MEMSTRATA_CACHE_MAX_ENTRIES" not in env


def test_log_warnings_count_lines_of_one_kind_once() -> None:
    log = "\n".join([
        "2026-12-04 08:48:20,250 INFO query_service.server: listening",
        "2026-12-04 08:48:39,944 WARNING mode.timers: Timer idle is overlapping (runtime=1.30)",
        "2026-12-04 08:48:41,101 WARNING mode.timers: Timer idle is overlapping (runtime=2.48)",
        "2026-12-04 08:49:26,281 ERROR memstrata.stream.worker: store failed for 3 sessions",
    ])
    assert log_warnings(log) == [
        "2 x WARNING mode.timers: Timer idle is overlapping (runtime=1.30)",
        "1 x ERROR memstrata.stream.worker: store failed for 3 sessions"]
    assert len(log_warnings(log, most=1)) == 1


def test_a_store_file_unmapped_does_not_hide_a_rising_heap() -> None:
    """The 25-minute soak's shape: serve's total fell when Qdrant Edge unmapped a 32 MB
    segment file, while its anonymous memory kept rising; the verdict must say RISING."""
    from argparse import Namespace

    from bench.soak import judge

    rows = []
    for i in range(12):
        anon = 200.0 + 3.0 * i
        files = 160.0 if i < 8 else 128.0  # one file unmapped two thirds in
        rows.append({"t_s": 60.0 * i, "messages": 2000 * i, "serve_peak_mb": anon + files,
                     "gate_peak_mb": 24.0, "tansu_peak_mb": 20.0, "serve_anon_mb": anon})
    args = Namespace(tol_mb_per_10k=2.0, tol_mb_per_min=2.0, p99_tol=0.5)
    trends = judge({"rows": rows, "latencies": [_calls(50)] * 12}, args)
    assert trends["serve"]["flat"]  # the total alone reads flat
    assert not trends["serve_anon"]["flat"]
    assert trends["serve_anon"]["per_10k_msgs"] == pytest.approx(15.0)
    assert not trends["flat"]
