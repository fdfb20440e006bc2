"""Draw a dashboard's panels from a live Prometheus as one PNG (no Grafana needed).

    python infra/grafana/preview.py --prometheus http://127.0.0.1:9090 \\
        --dashboard infra/grafana/dashboards/memstrata-overview.json \\
        --minutes 10 --output docs/img/dashboard-overview.png

Each panel's own queries are run (Grafana's ``$__rate_interval`` becomes ``--rate``,
``$__range`` the window) and plotted with matplotlib on the panel's grid position:
time series as lines, instant queries as bars. It shows what the dashboard reads, in
Grafana's layout, not Grafana's look.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any


def _get(base: str, path: str, params: dict[str, str]) -> list[dict[str, Any]]:
    url = f"{base.rstrip('/')}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - operator-given URL
        body = json.loads(r.read())
    if body.get("status") != "success":
        raise RuntimeError(f"{url}: {body}")
    return list(body["data"]["result"])


def _legend(fmt: str, labels: dict[str, str]) -> str:
    if not fmt or fmt == "__auto":
        return ",".join(f"{k}={v}" for k, v in labels.items() if k != "__name__") or "value"
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt)


def draw(prometheus: str, dashboard: Path, minutes: float, rate: str, output: Path) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dash = json.loads(dashboard.read_text())
    panels = [p for p in dash["panels"] if p.get("type") != "row"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    fig = plt.figure(figsize=(24, rows * 0.42))
    grid = fig.add_gridspec(rows, 24, hspace=2.2, wspace=1.2, top=0.965, bottom=0.02)
    end = time.time()
    start = end - minutes * 60
    window = f"{int(minutes * 60)}s"
    step = str(max(1, int(minutes * 60 / 120)))
    drawn = 0
    for p in panels:
        g = p["gridPos"]
        ax = fig.add_subplot(grid[g["y"]:g["y"] + g["h"], g["x"]:g["x"] + g["w"]])
        ax.set_title(p["title"], fontsize=10, loc="left")
        ax.tick_params(labelsize=7)
        unit = (p.get("fieldConfig") or {}).get("defaults", {}).get("unit", "")
        any_data = False
        for t in p.get("targets") or []:
            expr = t["expr"].replace("$__rate_interval", rate).replace("$__range", window)
            if t.get("instant"):
                result = _get(prometheus, "/api/v1/query", {"query": expr, "time": str(end)})
                names = [_legend(t.get("legendFormat", ""), r["metric"]) for r in result]
                values = [float(r["value"][1]) for r in result]
                order = sorted(range(len(names)), key=lambda i: names[i])
                ax.barh([names[i] for i in order], [values[i] for i in order], color="#3274d9")
                any_data |= bool(result)
                continue
            result = _get(prometheus, "/api/v1/query_range",
                          {"query": expr, "start": str(start), "end": str(end), "step": step})
            for r in result:
                xs = [(float(ts) - end) / 60 for ts, _ in r["values"]]
                ys = [float(v) for _, v in r["values"]]
                ax.plot(xs, ys, label=_legend(t.get("legendFormat", ""), r["metric"]),
                        linewidth=1.2)
                any_data = True
        if any_data:
            drawn += 1
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6, loc="upper left")
            if not any(t.get("instant") for t in p.get("targets") or []):
                ax.set_xlabel("minutes ago", fontsize=7)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes,
                    color="grey")
        if unit:
            ax.set_ylabel(unit, fontsize=7)
    fig.suptitle(f"{dash['title']} (queries of {dashboard.name}, last {minutes:g} min)",
                 fontsize=14, y=0.995)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=70, bbox_inches="tight")
    return drawn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--dashboard", type=Path, required=True)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--rate", default="1m", help="what $__rate_interval becomes")
    ap.add_argument("--output", type=Path, required=True)
    args = ap.parse_args()
    n = draw(args.prometheus, args.dashboard, args.minutes, args.rate, args.output)
    print(f"wrote {args.output}: {n} panels with data")


if __name__ == "__main__":
    main()
