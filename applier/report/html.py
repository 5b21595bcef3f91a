"""The HTML report: one self-contained file a replication engineer opens from CI artefacts.

Pure functions over the report dicts (no Spark, no database): :func:`render_run` over the
JSON report of ``applier run`` (:mod:`applier.report.json`), :func:`render_matrix` over the
rows of ``applier matrix``, :func:`render_bench` over the document of ``applier bench``.
Nothing is fetched: inline CSS and inline SVG, no script, no external font, image or link.
Every value from a report is untrusted text (article names, keys and error messages can
hold markup): it is escaped wherever it goes, and never reaches a style or an id.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from applier.report.charts.bench import bench_svg, rate
from applier.report.charts.throughput import throughput_svg
from applier.report.charts.timeline import timeline_end, timeline_svg
from applier.report.json import verify_line
from applier.report.markup import as_float, as_list, as_map, render

VERDICT_COLOURS = {"converged": "#1a7f37", "diverged": "#cf222e", "unknown": "#9a6700", "n/a": "#6e7781"}
OUTCOME_COLOURS = {
    "committed": "#2da44e",
    "reapplied": "#0969da",
    "rolled_back": "#8c959f",
    "conflict": "#cf222e",
    "failed": "#82071e",
}
# Conflict classes the apply reports; any other class gets a colour of the spare palette.
CLASS_COLOURS = {
    "row_not_found": "#cf222e",
    "duplicate_key": "#bf3989",
    "deadlock": "#8250df",
    "lock_timeout": "#bc4c00",
    "fk_violation": "#953800",
    "unique_violation": "#bf3989",
    "transient": "#6639ba",
}
_SPARE = ("#a40e26", "#7d4e00", "#4d2d00", "#1b7c83", "#5a32a3", "#99286e")
ROUND_FILLS = {"parallel": ("#f6f8fa", "#eaeef2"), "reset": ("#fff1e5",), "fatal": ("#ffebe9",)}
SERIES_COLOURS = ("#0969da", "#1a7f37", "#bc4c00", "#8250df", "#bf3989", "#1b7c83")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
 color:#1f2328;margin:0;background:#fff}
main{max-width:1080px;margin:0 auto;padding:16px 24px 32px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;
 padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.verdict{display:inline-block;font-size:26px;font-weight:700;color:#fff;padding:4px 16px;border-radius:6px;
 letter-spacing:.04em}
.reason{margin:8px 0;padding:8px 12px;background:#fff8c5;border-left:4px solid #9a6700;white-space:pre-wrap;
 word-break:break-word}
table{border-collapse:collapse;margin:6px 0 12px}
td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
table.kv th{width:210px}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;
 word-break:break-all}
.v{color:#fff;font-weight:600;border-radius:4px;padding:1px 6px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin:0 4px 0 10px}
.legend{font-size:12.5px;color:#424a53;margin:4px 0 10px}
.muted{color:#6e7781}
.why{color:#953800}
tr.div td{background:#fff5f5}
tr.inv td{background:#fff8c5}
.verdict.small{font-size:15px;padding:1px 10px}
footer{margin-top:32px;padding-top:8px;border-top:1px solid #d0d7de;color:#6e7781;font-size:12.5px}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
"""


# -- small helpers ---------------------------------------------------------------------------


def _e(x: Any) -> str:
    """Untrusted text, escaped for element content and quoted attributes."""
    return html.escape("" if x is None else str(x), quote=True)


def _num(x: Any, digits: int = 0) -> str:
    if isinstance(x, bool) or x is None:
        return "-" if x is None else str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:,.{digits}f}" if math.isfinite(x) else str(x)
    return _e(x)


def _float(x: Any, default: float = 0.0) -> float:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return default
    return f if math.isfinite(f) else default


def _int(x: Any, default: int = 0) -> int:
    try:
        return int(x)
    except (TypeError, ValueError):
        return default


def _json(x: Any) -> str:
    return _e(json.dumps(x, ensure_ascii=False, default=str, sort_keys=True))


def _key(k: Any) -> str:
    if isinstance(k, list | tuple) and len(k) == 1:
        k = k[0]
    return _e(json.dumps(k, ensure_ascii=False, default=str)) if not isinstance(k, str) else _e(k)


def _map(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def _list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, list | tuple) else []


def class_colour(name: Any) -> str:
    """A class's colour: its own if known, else one of the spare palette by a stable hash."""
    n = str(name or "")
    if n in CLASS_COLOURS:
        return CLASS_COLOURS[n]
    return _SPARE[sum(n.encode("utf-8")) % len(_SPARE)]


def _verdict_colour(v: Any) -> str:
    return VERDICT_COLOURS.get(str(v), VERDICT_COLOURS["unknown"])


def _badge(verdict: Any) -> str:
    return f'<span class="v" style="background:{_verdict_colour(verdict)}">{_e(verdict)}</span>'


def _nice_step(span: float, ticks: int = 8) -> float:
    """A round tick step (1, 2 or 5 x 10^k) giving about ``ticks`` ticks over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return float(m * mag)
    return float(10 * mag)


def _fmt_tick(v: float, step: float) -> str:
    if step >= 1:
        return f"{v:,.0f}"
    digits = max(0, -math.floor(math.log10(step)))
    return f"{v:.{digits}f}"


def _page(title: str, body: str, footer: str = "") -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n"
        f"<body><main>\n{body}\n"
        + (f"<footer>{footer}</footer>\n" if footer else "")
        + "</main></body></html>\n"
    )


def _kv(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table; keys are ours, values already escaped HTML."""
    return '<table class="kv">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def write_html(text: str, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


# -- applier run -------------------------------------------------------------------------------


def subscriptions_of(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The per-subscription reports: the flat plain-run dict itself, or each of ``subscriptions``."""
    if "subscriptions" in report:
        return [s for s in _list(report.get("subscriptions")) if isinstance(s, Mapping)]
    return [report]


def render_run(report: Mapping[str, Any]) -> str:
    """The HTML page of a run's JSON report (plain, several subscriptions, or failed early)."""
    subs = subscriptions_of(report)
    verdict = report.get("verdict", "unknown")
    several = "subscriptions" in report
    body = [
        "<h1>applier run</h1>",
        f'<div><span class="verdict" id="verdict" style="background:{_verdict_colour(verdict)}">'
        f"{_e(str(verdict).upper())}</span>"
        + (
            f' <span class="muted">exit code {_e(report["exit_code"])}</span>'
            if "exit_code" in report
            else ""
        )
        + "</div>",
    ]
    if several and report.get("reason"):
        body.append(f'<div class="reason">{_e(report["reason"])}</div>')
    if report.get("phase"):
        body.append(f"<p>last phase reached: <b>{_e(report['phase'])}</b></p>")
    if several:
        if not subs:
            body.append("<p>No subscription reached its verdict: the run ended before it applied.</p>")
            st = _map(_map(report.get("settings")).get("run"))
            if st:
                body.append(_kv(_settings_rows(st)))
        else:
            body.append(
                '<table><tr><th>subscription</th><th>verdict</th><th class="num">divergent rows</th>'
                '<th class="num">resets</th></tr>'
                + "".join(
                    f'<tr><td><a href="#sub-{i}">{_e(s.get("subscription"))}</a></td>'
                    f"<td>{_badge(s.get('verdict', 'unknown'))}</td>"
                    f'<td class="num">{_num(s.get("divergent_rows"))}</td>'
                    f'<td class="num">{_num(s.get("resets"))}</td></tr>'
                    for i, s in enumerate(subs)
                )
                + "</table>"
            )
    for i, sub in enumerate(subs):
        body.append(_subscription(sub, i, several))
    title = f"applier run: {verdict}"
    return _page(title, "\n".join(body), _footer(report, subs))


def _settings_rows(st: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (
            "model / partition / streams",
            f"{_e(st.get('model', '?'))} / {_e(st.get('partition', '?'))} / {_e(st.get('streams', '?'))} streams",
        ),
        (
            "commit batch / error policy",
            f"{_e(st.get('commit_batch_size', '?'))} transactions / {_e(st.get('error_policy', '?'))}",
        ),
    ]


def _streams_of(sub: Mapping[str, Any]) -> int:
    """N: the timeline's own count, else the settings' (per subscription, then [run])."""
    tl = _map(sub.get("timeline"))
    if _int(tl.get("streams")) > 0:
        return _int(tl["streams"])
    st = _map(sub.get("settings"))
    for where in (_map(st.get("subscription")), _map(st.get("run"))):
        if _int(where.get("streams")) > 0:
            return _int(where["streams"])
    return 0


def _subscription(sub: Mapping[str, Any], i: int, several: bool) -> str:
    out = [f'<section class="subscription" id="sub-{i}" data-subscription="{_e(sub.get("subscription"))}">']
    verdict = sub.get("verdict", "unknown")
    if several:
        out.append(f"<h2>subscription {_e(sub.get('subscription'))} {_badge(verdict)}</h2>")
    if sub.get("reason"):
        colour = _verdict_colour(verdict)
        out.append(f'<div class="reason" style="border-color:{colour}">{_e(sub["reason"])}</div>')
    out.append("<h2>Summary</h2>" if not several else "<h3>Summary</h3>")
    out.append(_summary(sub))
    if _map(sub.get("parallelism")):
        out.append("<h3>Why the rounds reset</h3>")
        out.append(_parallelism(_map(sub.get("parallelism"))))
    n = _streams_of(sub)
    out.append(f"<h3>Timeline of rounds per stream ({n} streams)</h3>")
    out.append(timeline_svg(sub.get("timeline"), n, f"s{i}"))
    out.append("<h3>Commands/s over time</h3>")
    series = sub.get("throughput_series") or _map(sub.get("timeline")).get("throughput")
    tp = sub.get("throughput_cmds_per_s")
    mean = _float(tp) if isinstance(tp, int | float) and not isinstance(tp, bool) else None
    out.append(throughput_svg(series, timeline_end(sub.get("timeline")), mean))
    out.append("<h3>Divergent rows and their blame</h3>")
    out.append(_divergent(sub))
    if _map(sub.get("by_article")):
        out.append("<h3>Rows per article</h3>")
        out.append(_by_article(_map(sub.get("by_article"))))
    out.append("<h3>Reset log</h3>")
    out.append(_reset_log(sub.get("reset_log")))
    if _list(sub.get("streams")):
        out.append("<h3>Per stream</h3>")
        out.append(_stream_stats(_list(sub.get("streams"))))
    out.append("</section>")
    return "\n".join(out)


def _summary(sub: Mapping[str, Any]) -> str:
    st = _map(_map(sub.get("settings")).get("run"))
    verdict = sub.get("verdict", "unknown")
    rows: list[tuple[str, str]] = [
        (
            "verdict",
            f'<span class="verdict small" style="background:{_verdict_colour(verdict)}">{_e(str(verdict).upper())}</span>',
        ),
        ("target", _e(sub.get("target", "-"))),
        ("source", _e(sub.get("source", "-"))),
        *_settings_rows(st),
        ("commands / transactions", f"{_num(sub.get('commands'))} / {_num(sub.get('transactions'))}"),
        (
            "rounds",
            f"{_num(sub.get('rounds'))} ({_num(sub.get('rounds_parallel'))} on {_e(st.get('streams', '?'))} streams)",
        ),
        ("resets to one stream", _num(sub.get("resets"))),
    ]
    conflicts = {k: v for k, v in _map(sub.get("conflicts")).items() if v}
    rows.append(
        (
            "conflicts",
            " ".join(
                f'<span class="sw" style="background:{class_colour(k)}"></span>{_e(k)} {_num(v)}'
                for k, v in conflicts.items()
            )
            or "none",
        )
    )
    if sub.get("skipped"):
        lost = _map(sub.get("skips")).get("rows_lost")
        rows.append(
            (
                "skipped commands",
                _num(sub["skipped"])
                + (f" (divergent rows they caused: {_num(lost)})" if lost is not None else ""),
            )
        )
    if sub.get("deferred"):
        rows.append(("deferred commands", _num(sub["deferred"])))
    tp = sub.get("throughput_cmds_per_s")
    rows.append(
        (
            "apply throughput",
            f"{_num(_float(tp))} commands/s ({_num(_float(sub.get('apply_seconds')), 2)} s)" if tp else "-",
        )
    )
    rows.append(
        ("rows expected / found", f"{_num(sub.get('rows_expected'))} / {_num(sub.get('rows_found'))}")
    )
    if _map(sub.get("verify")):
        rows.append(("read back", _e(verify_line(_map(sub.get("verify"))))))
    div = _map(sub.get("divergence"))
    n_div = sub.get("divergent_rows")
    rows.append(
        (
            "divergent rows",
            _num(n_div)
            + (
                f" (missing {_num(div.get('missing', 0))}, extra {_num(div.get('extra', 0))}, "
                f"different {_num(div.get('different', 0))})"
                if n_div
                else ""
            ),
        )
    )
    phases = _map(sub.get("phases_seconds"))
    if phases:
        rows.append(("phases", ", ".join(f"{_e(k)} {_num(_float(v), 2)} s" for k, v in phases.items())))
    return _kv(rows)


# -- divergent rows, resets, streams -----------------------------------------------------------

MAX_DIVERGENT = 200


def _divergent(sub: Mapping[str, Any]) -> str:
    rows = [_map(d) for d in _list(sub.get("divergent"))]
    n = _int(sub.get("divergent_rows"), len(rows))
    if not rows:
        return "<p>none</p>" if not n else f"<p>{_num(n)} divergent rows, none listed in the report</p>"
    out = [
        '<table class="divergent"><tr><th>kind</th><th>article</th><th>key</th><th>columns</th>'
        "<th>expected</th><th>found</th></tr>"
    ]
    for d in rows[:MAX_DIVERGENT]:
        out.append(
            f'<tr class="div"><td><b>{_e(d.get("kind"))}</b></td><td class="mono">{_e(d.get("article"))}</td>'
            f'<td class="mono">{_key(d.get("key"))}</td>'
            f'<td class="mono">{", ".join(_e(c) for c in _list(d.get("columns"))) or "-"}</td>'
            f'<td class="mono">{_json(d.get("expected"))}</td><td class="mono">{_json(d.get("found"))}</td></tr>'
        )
        cmds = [_map(c) for c in _list(d.get("commands"))]
        inv = _map(d.get("inverted"))
        detail = []
        if inv.get("why"):
            detail.append(f'<div class="why"><b>inverted pair</b>: {_e(inv["why"])}</div>')
        if _list(d.get("skipped")):
            detail.append(
                f"<div>skipped commands (lsn): {', '.join(_e(x) for x in _list(d.get('skipped')))}</div>"
            )
        if cmds:
            first, second = inv.get("first"), inv.get("second")
            detail.append(
                '<table class="blame"><tr><th>lsn</th><th>xact</th><th>op</th><th>key before -&gt; after</th>'
                "<th>stream</th><th>round</th><th>outcome</th></tr>"
                + "".join(
                    f"<tr{' class=inv' if c.get('lsn') is not None and c.get('lsn') in (first, second) else ''}>"
                    f'<td class="num">{_e(c.get("lsn"))}</td><td class="num">{_e(c.get("xact_seqno"))}</td>'
                    f"<td>{_e(c.get('op'))}</td>"
                    f'<td class="mono">{_key(c.get("key_before"))} -&gt; {_key(c.get("key_after"))}</td>'
                    f'<td class="num">{_e(c.get("stream", "?"))}</td><td class="num">{_e(c.get("round", "?"))}</td>'
                    f"<td>{_e(c.get('outcome') or '?')}</td></tr>"
                    for c in cmds
                )
                + "</table>"
            )
        else:
            detail.append('<div class="muted">no command touched this key</div>')
        out.append(f'<tr><td colspan="6">{"".join(detail)}</td></tr>')
    out.append("</table>")
    if len(rows) > MAX_DIVERGENT:
        out.append(f"<p>... {len(rows) - MAX_DIVERGENT} more divergent rows in the JSON report</p>")
    if n > len(rows):
        out.append(f'<p class="muted">{_num(n)} divergent rows in all; the report lists {len(rows)}</p>')
    return "".join(out)


def _by_article(by: Mapping[str, Any]) -> str:
    cols = ("expected", "found", "missing", "extra", "different")
    return (
        '<table class="by-article"><tr><th>article</th>'
        + "".join(f'<th class="num">{c}</th>' for c in cols)
        + "</tr>"
        + "".join(
            f'<tr><td class="mono">{_e(a)}</td>'
            + "".join(f'<td class="num">{_num(_map(v).get(c))}</td>' for c in cols)
            + "</tr>"
            for a, v in by.items()
        )
        + "</table>"
    )


def _reset_log(log: Any) -> str:
    entries = _list(log)
    if not entries:
        return "<p>no reset</p>"
    out = ['<table class="resets"><tr><th>round</th><th>streams</th><th>classes</th><th>message</th></tr>']
    for e in entries:
        if isinstance(e, Mapping):
            per = [_map(s) for s in _list(e.get("streams"))]
            frm = e.get("streams_from")
            streams = (
                (f"{_e(frm)} -&gt; 1" if frm is not None else "")
                + (": " if per and frm is not None else "")
                + "<br>".join(
                    f"stream {_e(s.get('stream'))} {_e(s.get('class'))}"
                    + (f' <span class="muted">lsn {_e(s["lsn"])}</span>' if s.get("lsn") is not None else "")
                    for s in per
                )
            ) or "-"
            classes = " ".join(
                f'<span class="sw" style="background:{class_colour(c)}"></span>{_e(c)}'
                for c in _list(e.get("classes"))
            )
            out.append(
                f'<tr><td class="num">{_e(e.get("round", "-"))}</td><td>{streams}</td><td>{classes or "-"}</td>'
                f"<td>{_e(e.get('message', ''))}</td></tr>"
            )
        else:
            out.append(f"<tr><td>-</td><td>-</td><td>-</td><td>{_e(e)}</td></tr>")
    return "".join(out) + "</table>"


def _command(c: Any) -> str:
    """One command of a dependency's example: lsn, transaction, stream, round, what it does."""
    c = _map(c)
    if c.get("op") == "U" and c.get("key_before") != c.get("key_after"):
        what = f"U key {_e(c.get('key_before'))} -&gt; {_e(c.get('key_after'))}"
    elif c.get("op") == "I":
        what = f"I {_e(c.get('key_after'))}"
    else:
        what = f"{_e(c.get('op'))} {_e(c.get('key_before'))}"
    return (
        f"{_e(c.get('article'))} {what} "
        f'<span class="muted">lsn {_e(c.get("lsn"))} xact {_e(c.get("xact_seqno"))} '
        f"stream {_e(c.get('stream'))} round {_e(c.get('round'))}</span>"
    )


def _parallelism(par: Mapping[str, Any]) -> str:
    """Why most rounds reset (the dependencies between streams within a round, by kind, each
    with an example) and what would let the traffic run in parallel, with the run's figures."""
    out = [f'<p class="why" id="resets-why">{_e(par.get("reason"))}</p>']
    advice = [a for a in _list(par.get("advice")) if a]
    if advice:
        out.append("<p>To run in parallel:</p><ul>" + "".join(f"<li>{_e(a)}</li>" for a in advice) + "</ul>")
    kinds = [_map(k) for k in _list(par.get("kinds"))]
    if kinds:
        out.append(
            '<table class="kinds"><tr><th>dependency</th><th class="num">commands</th>'
            '<th class="num">rounds</th><th>meets</th><th>example</th></tr>'
        )
        for k in kinds:
            ex = _map(k.get("example"))
            example = (
                f"{_e(ex.get('article'))} key {_e(ex.get('key'))}:<br>{_command(ex.get('depends_on'))}"
                f"<br>then {_command(ex.get('command'))}"
                if ex
                else "-"
            )
            out.append(
                f'<tr><td><b>{_e(k.get("kind"))}</b><br><span class="muted">{_e(k.get("what"))}</span></td>'
                f'<td class="num">{_num(k.get("commands"))}</td><td class="num">{_num(k.get("rounds"))}</td>'
                f"<td>{_e(k.get('conflict') or '-')}</td><td>{example}</td></tr>"
            )
        out.append("</table>")
    batches = [_map(b) for b in _list(par.get("batches"))]
    if batches:
        out.append(
            '<table class="batches"><tr><th class="num">commit batch</th><th class="num">rounds</th>'
            '<th class="num">rounds with a dependency</th><th class="num">dependent commands</th></tr>'
            + "".join(
                f'<tr><td class="num">{_num(b.get("commit_batch_size"))}</td><td class="num">{_num(b.get("rounds"))}</td>'
                f'<td class="num">{_num(b.get("rounds_with"))}</td><td class="num">{_num(b.get("commands"))}</td></tr>'
                for b in batches
            )
            + "</table>"
        )
    return "\n".join(out)


def _stream_stats(stats: list[Any]) -> str:
    rows = [_map(s) for s in stats]
    cols: list[str] = []
    for r in rows:
        cols += [str(k) for k in r if str(k) not in cols]
    return (
        '<table class="stream-stats"><tr>'
        + "".join(f'<th class="num">{_e(c)}</th>' for c in cols)
        + "</tr>"
        + "".join(
            "<tr>" + "".join(f'<td class="num">{_num(r.get(c), 3)}</td>' for c in cols) + "</tr>"
            for r in rows
        )
        + "</table>"
    )


def _footer(report: Mapping[str, Any], subs: Sequence[Mapping[str, Any]]) -> str:
    src = [report, *subs]

    def first(key: str) -> Any:
        return next((s[key] for s in src if s.get(key) is not None), None)

    parts = []
    if first("schema_version") is not None:
        parts.append(f"report schema {_e(first('schema_version'))}")
    versions = _map(first("versions"))
    if versions:
        parts.append(", ".join(f"{_e(k)} {_e(v)}" for k, v in versions.items()))
    if first("started_at") is not None:
        parts.append(f"started {_e(first('started_at'))}")
    if first("seconds") is not None:
        parts.append(f"{_num(_float(first('seconds')), 1)} s in all")
    return " &middot; ".join(parts) + (" &middot; " if parts else "") + "written by applier"


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
