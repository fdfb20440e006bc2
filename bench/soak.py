"""Soak: RSS of ``memstrata serve`` and its broker, and Search p99, over a compressed long run.

```bash
.venv/bin/python -m bench.soak [--minutes 5] [--interval 15] [--writers 8] [--search-rate 10]
    [--recycle-mb 23 --recycle-check-s 5] [--tracemalloc]
```

Starts a real ``memstrata serve`` (embedded broker, stream worker, stores, gRPC)
on a fresh temporary data dir, with its timers shortened so that hours of a
service's life pass in minutes: a session is closed after ``--idle-s`` (5 s
instead of 300 s) without events, pending writes are forgotten after 30 s
instead of 600 s; the per-tenant limits are lifted so that the load is served,
not refused (``--no-lift-limits`` keeps the defaults). Then, until
``--minutes`` have passed:

* ``--writers`` threads each take a new user after another: its
  ``--sessions-per-user`` sessions get ``--batches`` IngestBatch calls of
  ``--turns`` generated turns each (distinct message ids); each session then
  gets a fate: CloseSession, DeleteSession, or nothing (the worker closes it
  once it is idle). A user is then deleted (DeleteUser) at once, or joins the
  live users; past ``--live-users`` the oldest live user is deleted. The stored
  data stays about the same size, so a resident memory that keeps rising is
  something kept per message or per session, not data;
* a steady background of Search calls (``--search-rate`` per second) over the
  live users, each call timed.

Every ``--interval`` seconds it samples the resident memory (VmRSS) and CPU of
``serve``, of the broker's gate (``streams.broker_gate``) and of tansu (found as
descendants of ``serve`` through ``/proc``), the Search p50/p99 of that
interval, messages acknowledged so far and sessions open (the worker's own
gauge when its metrics have one, else sessions with an event in the last idle
period as the client counts them). RSS is read every second; a row keeps each
process's median and peak over its interval. At the end: a table per interval;
the slope of each process's peak-RSS series over the second half of the run
(Theil-Sen: the median of the pairwise slopes, so one allocator spike does not
make a trend) in MB per 10k messages and MB per minute, FLAT when neither
exceeds ``--tol-mb-per-10k`` (2) and ``--tol-mb-per-min`` (2); and the Search
p99 of all calls in the later half of that window against the earlier half,
FLAT when at most ``1 + --p99-tol`` (1.5) times it. Each row also has the
IngestBatch p99 and max of its interval and the embedded broker's recycles so far
(``memstrata_stream_broker_recycles_total``); ``--recycle-mb`` sets serve's recycle
limit (``MEMSTRATA_KAFKA_EMBEDDED_RECYCLE_RSS_MB``, checked every ``--recycle-check-s``)
so that recycles happen within the run; ``--cache-max-entries`` caps serve's process
caches (``MEMSTRATA_CACHE_MAX_ENTRIES``) so that they are full within minutes, not
hours, as the timers are shortened. ``--tracemalloc`` traces serve's Python
allocations and reports what grew between a snapshot at a third of the run and
one at its end (slower: not for RSS numbers). Output:
``bench/out/soak.json`` and ``bench/out/soak.png`` (recycles as red lines; ``--name``
changes the file names). Each row also splits serve's RSS into anonymous memory
and mapped files (``serve_anon_mb``, ``serve_file_mb``).
Loopback only; bounded by ``--minutes`` (at most 120) and by its thread counts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import re
import statistics
import tempfile
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench._common import OUT_DIR, console, cpu_seconds, load_average, percentiles_ms
from bench._common import print_table, progress, pyplot_or_none, status_mb

TENANT = "soak"
MIB = 1024 * 1024


# -- pure helpers (tests/unit/test_bench_soak.py) ----------------------------------

def theil_sen(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Median of the slopes between every two points with distinct x (NaN if there are none).

    Robust against one outlier (a page-cache or allocator spike in one sample),
    which would tilt a least-squares line over a handful of samples.
    """
    if len(xs) != len(ys):
        raise ValueError(f"xs and ys differ in length ({len(xs)} vs {len(ys)})")
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i])
              for i, j in itertools.combinations(range(len(xs)), 2) if xs[j] != xs[i]]
    return statistics.median(slopes) if slopes else math.nan


def second_half(n: int) -> slice:
    """The samples a trend is judged on: the later half (warm-up left out), at least two."""
    if n < 2:
        raise ValueError(f"a trend needs at least 2 samples, got {n}")
    return slice(min(n // 2, n - 2), n)


@dataclass(frozen=True)
class Trend:
    """How a series moves over the judged window, and whether that is flat."""

    per_10k_msgs: float  # MB per 10,000 acknowledged messages (NaN: no messages moved)
    per_min: float  # MB (or ms for latency) per minute
    flat: bool


def rss_trend(t_s: Sequence[float], msgs: Sequence[float], mb: Sequence[float],
              tol_per_10k: float, tol_per_min: float) -> Trend:
    """Slopes of an RSS series over its second half; flat when neither exceeds its tolerance.

    Only growth counts against it (memory given back is fine). A slope that cannot
    be measured (no messages acknowledged in the window) is not held against the
    series, but at least one slope must be measured and within tolerance.
    """
    w = second_half(len(mb))
    per_msg = theil_sen(msgs[w], mb[w])
    per_s = theil_sen(t_s[w], mb[w])
    per_10k, per_min = per_msg * 10_000, per_s * 60
    checks = [v <= tol for v, tol in ((per_10k, tol_per_10k), (per_min, tol_per_min))
              if not math.isnan(v)]
    return Trend(per_10k, per_min, bool(checks) and all(checks))


@dataclass(frozen=True)
class LatencyTrend:
    """Search p99 of the first and the last half of the judged window, all calls pooled."""

    early_p99_ms: float
    late_p99_ms: float
    ratio: float
    flat: bool


def latency_trend(per_interval_s: Sequence[Sequence[float]], tol: float) -> LatencyTrend:
    """Whether Search p99 holds over the second half of the run: flat when the p99 of all
    calls in its last half is at most ``1 + tol`` times that of its first half.

    Pooled, not per interval: an interval's p99 of about 100 calls is its second-worst
    call, which one busy second of a shared machine moves by hundreds of ms.
    """
    w = per_interval_s[second_half(len(per_interval_s))]
    mid = len(w) // 2
    early = [x for lat in w[:mid] for x in lat]
    late = [x for lat in w[mid:] for x in lat]
    if not early or not late:
        return LatencyTrend(math.nan, math.nan, math.nan, False)
    e, l99 = percentiles_ms(early)[1], percentiles_ms(late)[1]
    ratio = l99 / e if e > 0 else math.inf
    return LatencyTrend(e, l99, ratio, ratio <= 1 + tol)


def descendants(parents: Mapping[int, int], root: int) -> list[int]:
    """Every process below ``root`` in a pid -> parent pid map (children, their children...)."""
    kids: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], list(kids.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return sorted(out)


def process_kind(cmdline: Sequence[str]) -> str:
    """``gate``, ``tansu`` or ``other``, from a process's argv (the gate's argv names tansu too)."""
    if any("broker_gate" in a for a in cmdline):
        return "gate"
    if cmdline and "tansu" in Path(cmdline[0]).name:
        return "tansu"
    return "other"


_METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def metric_sums(text: str, wanted: Sequence[str]) -> dict[str, float]:
    """Sum of the samples of every metric whose name contains one of ``wanted`` (by name)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _METRIC.match(line)
        if m is None or not any(w in m.group(1) for w in wanted):
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out[m.group(1)] = out.get(m.group(1), 0.0) + value
    return out


# -- the processes ------------------------------------------------------------------

def _proc_table() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, argv) of every live, non-zombie process."""
    out: dict[int, tuple[int, list[str]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] not in ("Z", "X"):
            out[int(entry.name)] = (int(fields[1]), [a.decode(errors="replace") for a in argv if a])
    return out


def process_start_gone(pid: int) -> bool:
    """True when ``pid`` is no longer a live process."""
    return not Path(f"/proc/{pid}/status").exists()


def _cpu(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except OSError:
        return 0.0


def processes(serve_pid: int) -> dict[str, list[int]]:
    """``serve`` and its descendants by kind (``gate``, ``tansu``, ``other``)."""
    table = _proc_table()
    out: dict[str, list[int]] = {"serve": [serve_pid], "gate": [], "tansu": [], "other": []}
    for pid in descendants({p: pp for p, (pp, _) in table.items()}, serve_pid):
        out[process_kind(table[pid][1])].append(pid)
    return out


# -- the load -------------------------------------------------------------------------

_PLACES = ["Porto", "the lake", "Kyoto", "the climbing gym", "my sister's flat", "Lisbon",
           "the allotment", "Oslo", "the book club", "the vet"]
_THINGS = ["a kayak", "the sourdough starter", "a new job offer", "the cat Humbert",
           "marathon training", "a broken bike chain", "the tax return", "Spanish lessons",
           "a birthday party", "the garden fence"]
_QUESTIONS = ["where did I travel", "what happened with the cat", "what did I say about work",
              "when is the birthday party", "what am I training for", "what broke last week",
              "who did I visit", "what am I learning"]


def _turn_text(rng: random.Random, i: int) -> str:
    return (f"On day {rng.randint(1, 28)} I went to {rng.choice(_PLACES)} and we talked about "
            f"{rng.choice(_THINGS)}; then {rng.choice(_THINGS)} came up again (note {i}).")


@dataclass
class Counts:
    """What the clients did, shared by their threads (under ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    messages: int = 0
    duplicates: int = 0
    calls: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    searches: list[float] = field(default_factory=list)  # this interval's latencies (s)
    ingests: list[float] = field(default_factory=list)  # this interval's IngestBatch latencies
    #: Sessions with events and no close or delete yet: key -> time of their last event.
    open_sessions: dict[str, float] = field(default_factory=dict)
    live_users: deque[str] = field(default_factory=deque)

    def called(self, op: str) -> None:
        with self.lock:
            self.calls[op] = self.calls.get(op, 0) + 1

    def failed(self, op: str, exc: BaseException) -> None:
        kind = f"{op}: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        with self.lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1


class Driver:
    """The writers and the searchers, against one service address."""

    def __init__(self, address: str, key: str, args: argparse.Namespace) -> None:
        self.address, self.key, self.args = address, key, args
        self.counts = Counts()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._writer, args=(w,), daemon=True)
                        for w in range(args.writers)]
        self.threads += [threading.Thread(target=self._searcher, args=(s,), daemon=True)
                         for s in range(2)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def join(self, timeout_s: float) -> int:
        """Stop and wait; the number of threads still in a call after ``timeout_s``."""
        self.stop.set()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return sum(t.is_alive() for t in self.threads)

    def _client(self) -> Any:
        from memstrata.client import MemoryClient

        return MemoryClient(self.address, api_key=self.key, timeout_s=60.0)

    def _do(self, op: str, fn: Any, *a: Any) -> Any:
        try:
            out = fn(*a)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            self.counts.failed(op, exc)
            return None
        self.counts.called(op)
        return out

    def _writer(self, w: int) -> None:
        from memstrata.client import plan
        from memstrata.model import Scope

        a, c, rng = self.args, self.counts, random.Random(w)
        with self._client() as client:
            for n in itertools.count():
                if self.stop.is_set():
                    return
                user = f"w{w}u{n}"
                scope = Scope(tenant_id=TENANT, user_id=user)
                sessions = [f"s{j}" for j in range(a.sessions_per_user)]
                for b in range(a.batches):
                    events = [plan.event(user, s, f"{user}.{s}.m{b * a.turns + i}",
                                         "user" if i % 2 == 0 else "assistant",
                                         _turn_text(rng, b * a.turns + i))
                              for s in sessions for i in range(a.turns)]
                    t0 = time.perf_counter()
                    reply = self._do("IngestBatch", client.ingest, events)
                    took = time.perf_counter() - t0
                    now = time.monotonic()
                    with c.lock:
                        if reply is not None:
                            c.ingests.append(took)
                            c.messages += reply.accepted
                            c.duplicates += reply.duplicates
                        for s in sessions:
                            c.open_sessions[f"{user}/{s}"] = now
                for s in sessions:
                    fate = rng.random()
                    if fate < a.close_share:
                        self._do("CloseSession", client.close_session, scope, s)
                    elif fate < a.close_share + a.delete_session_share:
                        self._do("DeleteSession", client.delete, scope, s)
                    else:
                        continue  # left for the worker's idle close
                    with c.lock:
                        c.open_sessions.pop(f"{user}/{s}", None)
                if rng.random() < a.delete_user_share:
                    self._delete_user(client, user)
                    continue
                with c.lock:
                    c.live_users.append(user)
                    old = c.live_users.popleft() if len(c.live_users) > a.live_users else None
                if old is not None:
                    self._delete_user(client, old)

    def _delete_user(self, client: Any, user: str) -> None:
        from memstrata.model import Scope

        from memstrata.client import RemoteSessionNotFound

        try:
            client.delete(Scope(tenant_id=TENANT, user_id=user))
            self.counts.called("DeleteUser")
        except RemoteSessionNotFound:  # every session of it deleted already: nothing left
            self.counts.called("DeleteUser (nothing left)")
        except Exception as exc:  # noqa: BLE001 - counted and reported
            self.counts.failed("DeleteUser", exc)
        with self.counts.lock:
            for key in [k for k in self.counts.open_sessions if k.startswith(user + "/")]:
                del self.counts.open_sessions[key]

    def _searcher(self, s: int) -> None:
        from memstrata.model import Scope

        c, rng = self.counts, random.Random(1000 + s)
        period = 2.0 / self.args.search_rate  # two searchers share the rate
        with self._client() as client:
            due = time.monotonic()
            while not self.stop.is_set():
                due += period
                with c.lock:
                    user = rng.choice(c.live_users) if c.live_users else None
                if user is not None:
                    t0 = time.perf_counter()
                    hits = self._do("Search", client.search,
                                    Scope(tenant_id=TENANT, user_id=user), rng.choice(_QUESTIONS))
                    if hits is not None:
                        with c.lock:
                            c.searches.append(time.perf_counter() - t0)
                self.stop.wait(max(0.0, due - time.monotonic()))
                due = max(due, time.monotonic() - period)  # behind: do not burst to catch up

    def open_sessions(self, idle_s: float) -> int:
        """Sessions with an event in the last idle period and no close or delete yet."""
        now = time.monotonic()
        with self.counts.lock:
            for key in [k for k, t in self.counts.open_sessions.items() if now - t > idle_s]:
                del self.counts.open_sessions[key]
            return len(self.counts.open_sessions)


# -- sampling ---------------------------------------------------------------------------

SERVER_GAUGES = ("open_sessions", "sessions_open", "pending", "held_sessions",
                 "broker_recycles", "broker_rss_bytes", "process_cache")


class Sampler:
    """One row per interval: RSS and CPU by process kind, Search latency, progress.

    RSS is read every second (:meth:`tick`) and a row keeps each process kind's median
    and peak over its interval: ``serve``'s RSS swings by tens of MB within seconds
    (encoder and store buffers taken and given back), and a single reading per
    interval would turn that swing into a slope.
    """

    def __init__(self, serve_pid: int, metrics_port: int, driver: Driver, idle_s: float) -> None:
        self.serve_pid, self.metrics_port = serve_pid, metrics_port
        self.driver, self.idle_s = driver, idle_s
        self.t0 = time.monotonic()
        self.last_t = self.t0
        self.last_cpu: dict[str, float] = {}
        self.rows: list[dict[str, Any]] = []
        #: Each row's Search latencies (s), for the pooled p99 (not in the JSON).
        self.latencies: list[list[float]] = []
        self.procs = processes(serve_pid)
        self.ticks: dict[str, list[float]] = {k: [] for k in self.procs}

    def tick(self) -> None:
        if any(process_start_gone(p) for pids in self.procs.values() for p in pids):
            # The broker was recycled (a new tansu): find the processes again.
            now = processes(self.serve_pid)
            for kind in now:
                self.ticks.setdefault(kind, [])
            self.procs = now
        for kind, pids in self.procs.items():
            self.ticks[kind].append(sum(status_mb(p) for p in pids))

    def _server_gauges(self) -> dict[str, float]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                        timeout=5) as r:
                return metric_sums(r.read().decode(errors="replace"), SERVER_GAUGES)
        except OSError:
            return {}

    def sample(self) -> dict[str, Any]:
        self.tick()
        now = time.monotonic()
        c = self.driver.counts
        with c.lock:
            lat, c.searches = c.searches, []
            ingests, c.ingests = c.ingests, []
            msgs, errors = c.messages, sum(c.errors.values())
        p50, p99 = percentiles_ms(lat) if lat else (math.nan, math.nan)
        ingest_p99 = percentiles_ms(ingests)[1] if ingests else math.nan
        gauges = self._server_gauges()
        server_open = [v for k, v in gauges.items() if "open_sessions" in k or "sessions_open" in k]
        row: dict[str, Any] = {
            "t_s": round(now - self.t0, 1), "messages": msgs,
            "sessions_open": int(server_open[0]) if server_open else
            self.driver.open_sessions(self.idle_s),
            "sessions_open_from": "server" if server_open else "client",
            "searches": len(lat), "p50_ms": p50, "p99_ms": p99, "errors": errors,
            "ingests": len(ingests), "ingest_p99_ms": ingest_p99,
            "ingest_max_ms": max(ingests) * 1000 if ingests else math.nan,
            "recycles": int(sum(v for k, v in gauges.items() if "broker_recycles" in k)),
            "load": round(load_average(), 2), "server_gauges": gauges,
            "pids": {k: v for k, v in self.procs.items() if v},
            # serve's RSS split at the sample: anonymous (allocator, Python) vs mapped files
            "serve_anon_mb": round(status_mb(self.serve_pid, "RssAnon"), 1),
            "serve_file_mb": round(status_mb(self.serve_pid, "RssFile"), 1)}
        dt = now - self.last_t
        for kind, pids in self.procs.items():
            row[f"{kind}_mb"] = round(statistics.median(self.ticks[kind]), 1)
            row[f"{kind}_peak_mb"] = round(max(self.ticks[kind]), 1)
            cpu = sum(_cpu(p) for p in pids)
            row[f"{kind}_cpu_pct"] = (round(100 * (cpu - self.last_cpu[kind]) / dt, 1)
                                      if kind in self.last_cpu and dt > 0 else math.nan)
            self.last_cpu[kind] = cpu
        self.last_t = now
        self.rows.append(row)
        self.latencies.append(lat)
        # Found again for the next interval (a broker that restarted has new pids).
        self.procs = processes(self.serve_pid)
        self.ticks = {k: [] for k in self.procs}
        self.last_cpu = {k: self.last_cpu[k] if self.procs[k] == row["pids"].get(k, []) else
                         sum(_cpu(p) for p in self.procs[k]) for k in self.procs}
        return row


# -- running it -------------------------------------------------------------------------

def serve_env(args: argparse.Namespace, metrics_port: int) -> tuple[dict[str, str], list[str]]:
    """The variables that compress time and lift limits, those this tree's settings know;
    and the names it does not know (left out: the tree measured may predate them)."""
    from query_service.settings import ServiceSettings
    from streams.settings import StreamSettings

    wanted = {
        "MEMSTRATA_STREAM_IDLE_S": args.idle_s,
        "MEMSTRATA_STREAM_HOLD_MAX_S": 2,
        "MEMSTRATA_SERVICE_PENDING_KEEP_S": 30,
        "MEMSTRATA_SERVICE_METRICS_PORT": metrics_port,
    }
    if args.recycle_mb:
        wanted.update({"MEMSTRATA_KAFKA_EMBEDDED_RECYCLE_RSS_MB": args.recycle_mb,
                       "MEMSTRATA_KAFKA_EMBEDDED_RECYCLE_CHECK_S": args.recycle_check_s})
    if args.cache_max_entries is not None:
        wanted["MEMSTRATA_CACHE_MAX_ENTRIES"] = args.cache_max_entries
    if args.lift_limits:
        wanted.update({"MEMSTRATA_SERVICE_RATE_PER_S": 100_000, "MEMSTRATA_SERVICE_BURST": 100_000,
                       "MEMSTRATA_SERVICE_MAX_CONCURRENT": 1024,
                       "MEMSTRATA_SERVICE_QUEUE_MAX_WAIT_S": 60})
    known = {f"MEMSTRATA_STREAM_{f.upper()}" for f in StreamSettings.model_fields}
    known |= {f"MEMSTRATA_SERVICE_{f.upper()}" for f in ServiceSettings.model_fields}
    from memstrata.kafka.settings import KafkaSettings

    known |= {f"MEMSTRATA_KAFKA_{f.upper()}" for f in KafkaSettings.model_fields}
    from memstrata.config import Settings

    known |= {f"MEMSTRATA_{f.upper()}" for f in Settings.model_fields}
    env = {k: str(v) for k, v in wanted.items() if k in known}
    return env, sorted(set(wanted) - known)


def _log_counts(text: str) -> dict[str, int]:
    return {w: text.count(w) for w in ("WARNING", "ERROR", "CRITICAL", "Traceback", "overlapping",
                                       "embedded broker recycled", "recycle put off",
                                       "expected during an embedded broker recycle")}


def log_warnings(text: str, most: int = 10) -> list[str]:
    """serve's warning and error lines, counted by kind (numbers and timestamps masked),
    the first ``most`` kinds, each as ``N x <first such line>``."""
    kinds: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        if not any(w in line for w in ("WARNING", "ERROR", "CRITICAL")):
            continue
        body = line.split(" ", 2)[-1] if line[:4].isdigit() else line  # drop date and time
        kind = re.sub(r"\d+(\.\d+)?", "N", body)
        if kind in kinds:
            kinds[kind] = (kinds[kind][0] + 1, kinds[kind][1])
        elif len(kinds) < most:
            kinds[kind] = (1, body[:200])
    return [f"{n} x {first}" for n, first in kinds.values()]


#: ``sitecustomize`` for ``--tracemalloc``: traces ``serve`` only (the variable is taken
#: out of the environment before any child starts) and dumps a snapshot when asked by a
#: file ``take-N`` in the folder.
_TRACER = """
import os
_dir = os.environ.pop("MEMSTRATA_SOAK_TRACEMALLOC_DIR", None)
if _dir:
    import threading, time, tracemalloc
    tracemalloc.start(int(os.environ.pop("MEMSTRATA_SOAK_TRACEMALLOC_FRAMES", "6")))

    def _watch():  # a file asks for a snapshot (serve's worker owns SIGUSR1 and SIGUSR2)
        n = 1
        while True:
            if os.path.exists(os.path.join(_dir, "take-%d" % n)):
                tracemalloc.take_snapshot().dump(os.path.join(_dir, "snap-%d.tm" % n))
                open(os.path.join(_dir, "snap-%d.done" % n), "w").close()
                n += 1
            time.sleep(0.5)

    threading.Thread(target=_watch, daemon=True, name="soak-tracemalloc").start()
"""


def snapshot_serve(folder: Path, n: int, timeout_s: float = 300.0) -> Path | None:
    """Ask ``serve`` (started with the tracer) for its ``n``-th tracemalloc snapshot."""
    (folder / f"take-{n}").touch()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (folder / f"snap-{n}.done").exists():
            return folder / f"snap-{n}.tm"
        time.sleep(0.5)
    return None


def snapshot_growth(first: Path, last: Path, most: int = 15) -> list[str]:
    """What grew between two snapshots, by allocation site (largest first)."""
    import tracemalloc

    a = tracemalloc.Snapshot.load(str(first))
    b = tracemalloc.Snapshot.load(str(last))
    drop = [tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
    a, b = a.filter_traces(drop), b.filter_traces(drop)
    diff = b.compare_to(a, "traceback")
    total_a = sum(t.size for t in a.traces) / 1e6
    total_b = sum(t.size for t in b.traces) / 1e6
    out = [f"Python heap traced: {total_a:.1f} MB -> {total_b:.1f} MB ({total_b - total_a:+.1f} MB); "
           f"the rest of an RSS rise is outside it (native libraries, allocator)"]
    for stat in diff[:most]:
        frames = [f"{f.filename.split('site-packages/')[-1]}:{f.lineno}"
                  for f in stat.traceback[-4:]]
        out.append(f"{stat.size_diff / 1e6:+.2f} MB ({stat.count_diff:+d} blocks, now "
                   f"{stat.size / 1e6:.2f} MB): " + " <- ".join(reversed(frames)))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from streams.broker import free_port
    from tests.support.serve_proc import ServeProcess, add_key, wait_gone

    metrics_port = free_port()
    env, unknown = serve_env(args, metrics_port)
    console.print(f"serve with {' '.join(f'{k}={v}' for k, v in env.items())}"
                  + (f" (not in this tree: {', '.join(unknown)})" if unknown else ""))
    growth: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memstrata-soak-") as tmp:
        data = Path(tmp)
        key = add_key(data, TENANT)
        traces = data / "tracemalloc"
        serve_env_ = dict(env)
        if args.tracemalloc:  # a sitecustomize that traces serve (slower, more memory)
            traces.mkdir()
            (traces / "sitecustomize.py").write_text(_TRACER)
            serve_env_.update({"MEMSTRATA_SOAK_TRACEMALLOC_DIR": str(traces),
                               "PYTHONPATH": os.pathsep.join(
                                   [str(traces), os.environ.get("PYTHONPATH", "")]).rstrip(
                                   os.pathsep)})
        serve = ServeProcess(data, serve_env_)
        try:
            serve.wait_serving(timeout_s=180)
            driver = Driver(serve.address, key, args)
            sampler = Sampler(serve.pid, metrics_port, driver, args.idle_s)
            _print_row(sampler.sample())
            driver.start()
            snaps: list[Path | None] = []
            if args.tracemalloc:  # the first snapshot once warm (a third of the run)
                _drive(args, sampler, until_s=args.minutes * 20)
                snaps.append(snapshot_serve(traces, 1))
            _drive(args, sampler)
            if args.tracemalloc:
                snaps.append(snapshot_serve(traces, 2))
                first, last = snaps
                if first is not None and last is not None:
                    growth = snapshot_growth(first, last)
            stuck = driver.join(timeout_s=90)
            brokers = [p for k in ("gate", "tansu") for p in processes(serve.pid)[k]]
        finally:
            serve.stop(timeout_s=60)
        exit_code = serve.proc.returncode
        left = wait_gone(brokers, timeout_s=10)
        log = serve.log_path.read_text(errors="replace")
    c = driver.counts
    return {"config": vars(args), "env": env, "env_unknown": unknown, "rows": sampler.rows,
            "latencies": sampler.latencies,
            "calls": c.calls, "errors": c.errors, "messages": c.messages,
            "duplicates": c.duplicates, "threads_stuck": stuck, "serve_exit": exit_code,
            "broker_processes_left": left, "serve_log_counts": _log_counts(log),
            "serve_log_warnings": log_warnings(log), "serve_log_tail": log[-3000:],
            "serve_tracemalloc_growth": growth}


def _drive(args: argparse.Namespace, sampler: Sampler, until_s: float | None = None) -> None:
    total = args.minutes * 60 if until_s is None else until_s
    with progress() as bar:
        task = bar.add_task("soak", total=round(total))
        next_sample = (len(sampler.rows)) * args.interval
        while (elapsed := time.monotonic() - sampler.t0) < total:
            time.sleep(min(1.0, max(0.0, next_sample - elapsed)))
            elapsed = time.monotonic() - sampler.t0
            sampler.tick()
            if elapsed >= next_sample:
                row = sampler.sample()
                bar.console.print(_row_line(row))
                bar.update(task, description=f"soak {row['messages']:,} msgs, serve "
                           f"{row['serve_mb']:.0f} MB, tansu {row['tansu_mb']:.0f} MB")
                next_sample += args.interval
            bar.update(task, completed=min(round(elapsed), round(total)))


def _row_line(row: Mapping[str, Any]) -> str:
    return (f"t={row['t_s']:6.0f} s  msgs {row['messages']:>7,}  open {row['sessions_open']:>4}  "
            f"serve {row['serve_mb']:6.1f} MB  gate {row['gate_mb']:5.1f} MB  tansu "
            f"{row['tansu_mb']:6.1f} MB  Search p50/p99 {row['p50_ms']:6.1f}/"
            f"{row['p99_ms']:6.1f} ms ({row['searches']})  Ingest p99 "
            f"{row.get('ingest_p99_ms', math.nan):6.0f} ms  recycles {row.get('recycles', 0)}  "
            f"errors {row['errors']}  load {row['load']}")


def _print_row(row: Mapping[str, Any]) -> None:
    console.print(_row_line(row))


def judge(result: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The trends of the run's rows (the first row, before any load, left out)."""
    rows = result["rows"][1:]
    if len(rows) < 4:
        return {"why_not": f"only {len(rows)} samples under load: run longer or sample oftener"}
    t = [r["t_s"] for r in rows]
    msgs = [float(r["messages"]) for r in rows]
    out: dict[str, Any] = {}
    for kind in ("serve", "gate", "tansu"):
        out[kind] = asdict(rss_trend(t, msgs, [r[f"{kind}_peak_mb"] for r in rows],
                                     args.tol_mb_per_10k, args.tol_mb_per_min))
    if all(r.get("serve_anon_mb") is not None for r in rows):
        # judged apart: a store file unmapped (tens of MB at once) can hide a rise of the heap
        out["serve_anon"] = asdict(rss_trend(t, msgs, [r["serve_anon_mb"] for r in rows],
                                             args.tol_mb_per_10k, args.tol_mb_per_min))
    out["search_p99"] = asdict(latency_trend(result["latencies"][1:], args.p99_tol))
    w = second_half(len(rows))
    out["window"] = {"minutes": round((t[-1] - t[w][0]) / 60, 2),
                     "messages": int(msgs[-1] - msgs[w][0]), "samples": len(t[w])}
    out["flat"] = all(v["flat"] for v in out.values() if isinstance(v, dict) and "flat" in v)
    return out


def _verdict(flat: bool) -> str:
    return "[green]FLAT[/green]" if flat else "[red]RISING[/red]"


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    rows = result["rows"]
    print_table("Soak, per interval", [
        "t (min)", "messages", "sessions open", "serve MB", "serve peak", "gate peak", "tansu peak",
        "serve CPU %", "broker CPU %", "searches", "p50 ms", "p99 ms", "Ingest p99 ms",
        "Ingest max ms", "recycles", "errors", "load"],
        [[r["t_s"] / 60, r["messages"], r["sessions_open"], r["serve_mb"], r["serve_peak_mb"],
          r["gate_peak_mb"], r["tansu_peak_mb"], r["serve_cpu_pct"],
          r["gate_cpu_pct"] + r["tansu_cpu_pct"],
          r["searches"], r["p50_ms"], r["p99_ms"], r.get("ingest_p99_ms"),
          r.get("ingest_max_ms"), r.get("recycles"), r["errors"], r["load"]] for r in rows])
    trends = result["trends"]
    if "why_not" in trends:
        console.print(f"[yellow]no trend: {trends['why_not']}[/yellow]")
    else:
        win = trends["window"]
        print_table(f"RSS trend over the second half ({win['minutes']} min, {win['messages']:,} "
                    f"messages, {win['samples']} samples; Theil-Sen slope of each interval's "
                    f"peak RSS). FLAT: it grows at most {args.tol_mb_per_10k:g} MB per 10k "
                    f"messages and {args.tol_mb_per_min:g} MB per minute",
                    ["process", "MB per 10k msgs", "MB per minute", "verdict"],
                    [[name, trends[name]["per_10k_msgs"], trends[name]["per_min"],
                      _verdict(trends[name]["flat"])]
                     for name in ("serve", "serve_anon", "gate", "tansu") if name in trends])
        p = trends["search_p99"]
        print_table(f"Search p99 over the second half, all calls of each half pooled. FLAT: the "
                    f"later at most {1 + args.p99_tol:g}x the earlier",
                    ["earlier p99 ms", "later p99 ms", "later / earlier", "verdict"],
                    [[p["early_p99_ms"], p["late_p99_ms"], p["ratio"], _verdict(p["flat"])]])
    if rows:
        console.print(f"embedded broker recycles: {rows[-1].get('recycles', 0)} (the worker's "
                      f"memstrata_stream_broker_recycles_total)")
        g = rows[-1].get("server_gauges", {})
        if "memstrata_process_cache_entries" in g:
            console.print(f"process caches at the end: {g['memstrata_process_cache_entries']:,.0f} "
                          f"of {g.get('memstrata_process_cache_bound_entries', math.nan):,.0f} "
                          "entries (memstrata_process_cache_entries)")
    console.print(f"calls: {result['calls']}; messages acknowledged {result['messages']:,} "
                  f"({result['duplicates']} duplicates); serve exit {result['serve_exit']}; "
                  f"broker processes left {len(result['broker_processes_left'])}; serve log "
                  f"{result['serve_log_counts']}")
    if rows:
        src = rows[-1]["sessions_open_from"]
        console.print("sessions open: " + ("the worker's gauge" if src == "server" else
                      "counted by the client (sessions with an event in the last idle period, "
                      "not closed or deleted): this tree's metrics have no such gauge"))
    if "flat" in trends:
        console.print("overall: " + _verdict(trends["flat"]))
    for line in result["serve_log_warnings"]:
        console.print(f"  serve log: {line}", soft_wrap=True)
    for line in result.get("serve_tracemalloc_growth", []):
        console.print(f"  serve grew: {line}", soft_wrap=True)
    for kind, n in sorted(result["errors"].items(), key=lambda kv: -kv[1])[:8]:
        console.print(f"  [red]{n} x {kind}[/red]")


def plot(result: dict[str, Any], name: str = "soak") -> Path | None:
    plt = pyplot_or_none()
    rows = result["rows"]
    if plt is None or len(rows) < 2:
        return None
    t = [r["t_s"] / 60 for r in rows]
    fig, (ax1, ax3, ax2) = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    ax1.plot(t, [r["serve_peak_mb"] for r in rows], marker="o", label="serve, interval peak")
    ax1.plot(t, [r["serve_mb"] for r in rows], marker=".", linestyle="--",
             label="serve, interval median")
    ax1.set_ylabel("RSS (MB)")
    ax1.legend()
    ax1.set_title("memstrata serve soak: resident memory and gRPC latency "
                  "(red lines: broker recycles)")
    for kind in ("gate", "tansu"):
        ax3.plot(t, [r[f"{kind}_peak_mb"] for r in rows], marker="o", label=f"broker {kind}")
    ax3.set_ylabel("RSS (MB), interval peak")
    ax3.legend()
    ax2.plot(t, [r["p99_ms"] for r in rows], marker="o", label="Search p99")
    ax2.plot(t, [r.get("ingest_p99_ms") for r in rows], marker="x", label="IngestBatch p99")
    ax2.set_yscale("log")
    for prev, row in zip(rows, rows[1:]):  # an interval with a recycle of the broker
        if (row.get("recycles") or 0) > (prev.get("recycles") or 0):
            for ax in (ax1, ax3, ax2):
                ax.axvline(row["t_s"] / 60, color="red", alpha=0.25, linewidth=1)
    ax2.plot(t, [r["p50_ms"] for r in rows], marker=".", label="Search p50")
    ax2.set_ylabel("ms")
    ax2.set_xlabel("minutes")
    ax2.legend(loc="upper left")
    msgs = ax2.twinx()
    msgs.plot(t, [r["messages"] for r in rows], color="grey", linestyle=":", label="messages")
    msgs.set_ylabel("messages acknowledged")
    path = OUT_DIR / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _file_stem(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", text):
        raise argparse.ArgumentTypeError(
            f"--name must be 1-64 letters, digits, '_', '.' or '-', got {text!r}")
    return text


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    bounds: dict[str, tuple[type, float, float, float]] = {
        # flag: (type, default, min, max)
        "minutes": (float, 5, 0.5, 120), "interval": (float, 15, 2, 600),
        "writers": (int, 8, 1, 64), "search_rate": (float, 10, 0.5, 500),
        "sessions_per_user": (int, 3, 1, 50), "batches": (int, 2, 1, 50),
        "turns": (int, 4, 1, 100), "live_users": (int, 20, 1, 100_000),
        "idle_s": (float, 5, 0.5, 3600), "close_share": (float, 0.4, 0, 1),
        "delete_session_share": (float, 0.2, 0, 1), "delete_user_share": (float, 0.3, 0, 1),
        "tol_mb_per_10k": (float, 2.0, 0, 1e6), "tol_mb_per_min": (float, 2.0, 0, 1e6),
        "p99_tol": (float, 0.5, 0, 100),
        # the embedded broker's recycle limit (MB; 0: serve's default) and check period
        "recycle_mb": (float, 0, 0, 1_048_576), "recycle_check_s": (float, 10, 0.5, 3600),
    }
    for name, (kind, default, _, _) in bounds.items():
        ap.add_argument("--" + name.replace("_", "-"), type=kind, default=default)
    ap.add_argument("--cache-max-entries", type=int, default=None, metavar="N",
                    help="serve's MEMSTRATA_CACHE_MAX_ENTRIES: a low cap fills the process "
                         "caches within minutes, as the shortened timers compress hours "
                         "(default: their own bounds)")
    ap.add_argument("--tracemalloc", action="store_true",
                    help="trace serve's allocations; report what grew between a snapshot at "
                         "a third of the run and one at its end (slower: not for RSS numbers)")
    ap.add_argument("--no-lift-limits", dest="lift_limits", action="store_false",
                    help="keep the default per-tenant limits (calls may then be refused)")
    ap.add_argument("--name", default="soak", type=_file_stem,
                    help="output files bench/out/NAME.json and NAME.png (default soak)")
    args = ap.parse_args(argv)
    for name, (_, _, lo, hi) in bounds.items():
        if not lo <= getattr(args, name) <= hi:
            ap.error(f"--{name.replace('_', '-')} must be within {lo:g}..{hi:g}, "
                     f"got {getattr(args, name)}")
    if args.cache_max_entries is not None and not 0 <= args.cache_max_entries <= 1_000_000:
        ap.error(f"--cache-max-entries must be within 0..1000000, got {args.cache_max_entries}")
    if args.close_share + args.delete_session_share > 1:
        ap.error("--close-share plus --delete-session-share must be at most 1, got "
                 f"{args.close_share + args.delete_session_share:g}")
    if args.interval * 4 > args.minutes * 60:
        ap.error(f"--interval ({args.interval:g} s) leaves fewer than 4 samples in "
                 f"--minutes {args.minutes:g}: a trend needs them")
    return args


def _no_nan(value: Any) -> Any:
    """NaN (not measured) as null, so the JSON is standard."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_no_nan(v) for v in value]
    return value


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    console.print(f"soak for {args.minutes:g} min, a sample every {args.interval:g} s, "
                  f"load average {load_average():.2f} on {os.cpu_count()} cores")
    result = run(args)
    result["trends"] = judge(result, args)
    report(result, args)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"{args.name}.json"
    saved = {k: v for k, v in result.items() if k != "latencies"}
    out.write_text(json.dumps(_no_nan(saved), indent=2, default=str) + "\n")
    png = plot(result, args.name)
    console.print(f"wrote {out}" + (f" and {png}" if png else ""))


if __name__ == "__main__":
    main()
