"""The HTML report: one self-contained file a replication engineer opens from CI artefacts.

Pure functions over the report dicts (no Spark, no database): :func:`render_run` over the
JSON report of ``applier run`` (:mod:`applier.report.json`), :func:`render_matrix` over the
rows of ``applier matrix``, :func:`render_bench` over the document of ``applier bench``.
Nothing is fetched: inline CSS and inline SVG, no script, no external font, image or link.
The pages are Jinja2 templates in ``templates/`` with autoescape (:mod:`applier.report.markup`),
the charts modules of :mod:`applier.report.charts`: every value from a report is untrusted text
(article names, keys and error messages can hold markup) and is escaped wherever it goes,
without a call to forget; it never reaches a style or an id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from applier.report.charts.bench import bench_svg, rate
from applier.report.charts.lag import load_section, thresholds_section
from applier.report.charts.throughput import throughput_svg
from applier.report.charts.timeline import timeline_end, timeline_svg
from applier.report.json import verify_line
from applier.report.markup import as_float, as_int, as_list, as_map, is_numeric, render

__all__ = ["render_bench", "render_matrix", "render_run", "subscriptions_of", "timeline_svg", "write_html"]


def write_html(text: str, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


# -- applier run -------------------------------------------------------------------------------


def subscriptions_of(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The per-subscription reports: the flat plain-run dict itself, or each of ``subscriptions``."""
    if "subscriptions" in report:
        return [s for s in as_list(report.get("subscriptions")) if isinstance(s, Mapping)]
    return [report]


def render_run(report: Mapping[str, Any]) -> str:
    """The HTML page of a run's JSON report (plain, several subscriptions, or failed early)."""
    subs = subscriptions_of(report)
    verdict = report.get("verdict", "unknown")
    checked = as_list(report.get("thresholds"))
    return str(
        render(
            "run.html.j2",
            title=f"applier run: {verdict}",
            report=report,
            verdict=verdict,
            several="subscriptions" in report,
            run_settings=as_map(as_map(report.get("settings")).get("run")),
            thresholds=thresholds_section(checked),
            subs=[_subscription(sub, i, checked) for i, sub in enumerate(subs)],
            footer=_footer(report, subs),
        )
    )


def _streams_of(sub: Mapping[str, Any]) -> int:
    """N: the timeline's own count, else the settings' (per subscription, then [run])."""
    tl = as_map(sub.get("timeline"))
    if as_int(tl.get("streams")) > 0:
        return as_int(tl["streams"])
    st = as_map(sub.get("settings"))
    for where in (as_map(st.get("subscription")), as_map(st.get("run"))):
        if as_int(where.get("streams")) > 0:
            return as_int(where["streams"])
    return 0


def _subscription(
    sub: Mapping[str, Any], i: int, thresholds: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """What the page shows of one subscription beyond its report's values: the charts drawn,
    the read-back line, the per-stream table's columns."""
    n = _streams_of(sub)
    series = sub.get("throughput_series") or as_map(sub.get("timeline")).get("throughput")
    tp = sub.get("throughput_cmds_per_s")
    verify = as_map(sub.get("verify"))
    stream_rows = [as_map(s) for s in as_list(sub.get("streams"))]
    stream_cols: list[str] = []
    for r in stream_rows:
        stream_cols += [str(k) for k in r if str(k) not in stream_cols]
    return {
        "sub": sub,
        "i": i,
        "settings": as_map(as_map(sub.get("settings")).get("run")),
        "streams": n,
        "timeline": timeline_svg(sub.get("timeline"), n, f"s{i}"),
        "throughput": throughput_svg(
            series, timeline_end(sub.get("timeline")), as_float(tp) if is_numeric(tp) else None
        ),
        "load": load_section(as_map(sub.get("load")), thresholds, f"s{i}"),
        "read_back": verify_line(verify) if verify else None,
        "stream_rows": stream_rows,
        "stream_cols": stream_cols,
    }


def _footer(report: Mapping[str, Any], subs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The footer's facts: each from the envelope, else from the first subscription that has it."""
    src = [report, *subs]

    def first(key: str) -> Any:
        return next((s[key] for s in src if s.get(key) is not None), None)

    return {
        "schema": first("schema_version"),
        "versions": as_map(first("versions")),
        "started": first("started_at"),
        "seconds": first("seconds"),
    }


# -- applier matrix ----------------------------------------------------------------------------

MATRIX_COLUMNS = (
    ("workload", "workload"),
    ("partition", "partition"),
    ("model", "model"),
    ("policy", "policy"),
    ("conflicts", "conflicts"),
    ("resets", "resets"),
    ("deferred", "deferred"),
    ("skipped", "skipped"),
    ("verdict", "verdict"),
    ("divergent_rows", "divergent"),
    ("inverted_pairs", "inverted pairs"),
    ("throughput_cmds_per_s", "cmds/s"),
)


def render_matrix(doc: Mapping[str, Any]) -> str:
    """The hazard matrix: one row per cell, the verdicts coloured, a reason where there is one."""
    rows = [as_map(r) for r in as_list(doc.get("rows"))]
    counts = Counter(str(r.get("verdict")) for r in rows)
    return str(
        render(
            "matrix.html.j2",
            title="applier matrix",
            doc=doc,
            rows=rows,
            counts=sorted(counts.items()),
            columns=MATRIX_COLUMNS,
        )
    )


# -- applier bench ------------------------------------------------------------------------------


def _kilo(v: float | None) -> str:
    return "-" if v is None else f"{v / 1000:.1f}k"


def _ratio(v: Any) -> str:
    return "-" if v is None else f"{as_float(v):.2f}"


def _goal_state(g: Mapping[str, Any]) -> tuple[str, str]:
    """A goal's state and its colour: met, missed (by how much), or not measured."""
    met = g.get("met")
    if met is True:
        return "met", "#1a7f37"
    if met is False:
        short = g.get("miss_fraction")
        return "MISSED" + (f" (short by {as_float(short):.0%})" if short is not None else ""), "#cf222e"
    return "not measured", "#6e7781"


def render_bench(doc: Mapping[str, Any]) -> str:
    """The benchmark's table (commands/s per N with the ratios), its goals and one inline SVG
    chart per synchronous_commit setting (commands/s against N)."""
    b = as_map(doc.get("bench"))
    runs = as_map(doc.get("runs"))
    goals = [as_map(g) for g in as_list(doc.get("goals"))]
    return str(
        render(
            "bench.html.j2",
            title="applier bench",
            b=b,
            runs=runs,
            goals=[(g, *_goal_state(g)) for g in goals],
            charts=[bench_svg(str(sync), as_map(run)) for sync, run in runs.items()],
            machine=as_map(b.get("machine")),
            rate=rate,
            kilo=_kilo,
            ratio=_ratio,
        )
    )
