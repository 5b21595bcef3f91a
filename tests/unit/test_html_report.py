"""The HTML report (applier/report/html.py): pure functions over report dicts, read back with
the standard library's html.parser. Synthetic reports in tests/data/reports/."""

from __future__ import annotations

import copy
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from applier.bench.report import Measure, PerN, SyncRun, report_json
from applier.report.html import render_bench, render_matrix, render_run, timeline_svg

DATA = Path(__file__).parent.parent / "data" / "reports"
VOID = {"meta", "br", "img", "input", "link", "hr", "area", "base", "col", "embed", "source", "wbr"}
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


class Dom(HTMLParser):
    """Every element with its attributes and the ids/classes of the elements around it, the
    text with the tags around it, and every closing tag that did not match its opening one."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.elements: list[tuple[str, dict[str, str], list[dict[str, str]]]] = []
        self.texts: list[tuple[str, list[str]]] = []
        self.errors: list[str] = []
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {[t for t, _ in self.stack]}")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a, [x for _, x in self.stack]))
        if tag not in VOID:
            self.stack.append((tag, a))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}, [x for _, x in self.stack]))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1][0] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.texts.append((data, [t for t, _ in self.stack]))

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[dict[str, str]]:
        return [
            a
            for t, a, _ in self.elements
            if (tag is None or t == tag)
            and (cls is None or cls in a.get("class", "").split())
            and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def inside(self, cls: str, ancestor_id: str) -> list[dict[str, str]]:
        """Elements of class ``cls`` under the element whose id is ``ancestor_id``."""
        return [
            a
            for _, a, up in self.elements
            if cls in a.get("class", "").split() and any(u.get("id") == ancestor_id for u in up)
        ]

    @property
    def text(self) -> str:
        return " ".join(t for t, _ in self.texts)


def check_page(text: str) -> Dom:
    """Parses with every tag closed in order, and nothing is fetched."""
    assert text.startswith("<!DOCTYPE html>")
    dom = Dom(text)
    assert dom.errors == []
    for tag, a, _ in dom.elements:
        for k in ("src", "href", "xlink:href", "action", "poster", "data"):
            v = a.get(k, "")
            assert not re.match(r"\s*(https?:)?//", v, re.I), (tag, k, v)
            assert not v.lower().startswith(("javascript:", "data:")), (tag, k, v)
        assert tag not in ("script", "link", "iframe", "object", "embed", "img"), tag
        assert not [k for k in a if k.startswith("on")], (tag, a)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//|@import", text, re.I)
    return dom


def test_converged_run_one_lane_per_stream_even_idle_ones():
    report = load("converged")
    dom = check_page(render_run(report))
    lanes = dom.find("g", "lane")
    assert [a["data-stream"] for a in lanes] == ["0", "1", "2", "3"]
    # stream 3 did no work: its lane is there, empty
    assert not any(s["stream"] == 3 for s in report["timeline"]["segments"])
    assert [a["data-round"] for a in dom.find("g", "round", data_kind="reset")] == ["2", "6"]
    assert len(dom.find("g", "round", data_kind="parallel")) == 8
    # every share is a bar with its tooltip; the reset's single connection is stream 0's
    assert len(dom.find("rect", "seg")) == len(report["timeline"]["segments"])
    assert len(dom.find("rect", "reapplied")) == 2
    conflicts = dom.find("rect", "conflict")
    assert len(conflicts) == 2 and {c["fill"] for c in conflicts} == {"#cf222e", "#bf3989"}
    titles = [t for t, up in dom.texts if up[-1] == "title"]
    assert "stream 1, round 2: conflict (row_not_found), 120 commands, 0.380 s to 0.460 s" in titles
    assert any(t.startswith("round 6: reset (duplicate_key)") for t in titles)
    assert "CONVERGED" in dom.text and "0.5 s" in dom.text  # the verdict, the axis in seconds
    # commands/s: a step per bucket, its moving average, the run's mean
    (area,) = dom.find("polygon", "area")
    assert len(area["points"].split()) == 2 * len(report["throughput_series"]["points"]) + 2
    assert len(dom.find("polyline", "average")) == 1 and len(dom.find("line", "mean")) == 1
    assert "mean over the apply, 3,512 commands/s" in dom.text
    assert "report schema 2" in dom.text and "spark 3.5.1" in dom.text  # the footer
    assert "Number of subscription streams has been reset from 4 to 1" in dom.text


def test_lanes_come_from_the_settings_when_the_timeline_has_no_count():
    report = load("converged")
    del report["timeline"]["streams"]
    report["settings"]["run"]["streams"] = 6
    dom = check_page(render_run(report))
    assert len(dom.find("g", "lane")) == 6


def test_diverged_run_lists_keys_with_their_blame_and_the_inverted_pair():
    dom = check_page(render_run(load("diverged")))
    assert "DIVERGED" in dom.text
    rows = dom.find("tr", "div")
    assert len(rows) == 2
    text = dom.text
    for piece in ("dbo.reorder_items", "different", "qty", "extra", "skipped commands (lsn): 1500"):
        assert piece in text
    assert "lsn 1377 (xact 275) ran on stream 0 before lsn 1201 (xact 240) committed on stream 2" in text
    cells = [t for t, up in dom.texts if up[-1] == "td"]
    assert cells[cells.index("1201") :][:7] == ["1201", "240", "U", "[17] -> [17]", "2", "3", "applied"]
    assert len(dom.find("tr", "inv")) == 2  # both commands of the inverted pair stand out
    # the independent model records shares but no rounds: lanes without bands
    assert len(dom.find("g", "lane")) == 4 and not dom.find("g", "round")


def test_a_run_that_failed_early_still_renders_unknown_and_why():
    dom = check_page(render_run(load("failed_early")))
    assert "UNKNOWN" in dom.text
    assert "target unreachable: could not connect to server" in dom.text
    assert "installed" in dom.text and "key-hash" in dom.text  # the phase reached and the settings
    assert not dom.find("g", "lane")
    verdict = dom.find("span", "verdict", id="verdict")[0]
    assert "#9a6700" in verdict["style"]


def test_several_subscriptions_each_with_its_own_lanes():
    report = load("multi")
    dom = check_page(render_run(report))
    assert [len(dom.inside("lane", f"sub-{i}")) for i in (0, 1)] == [3, 2]
    assert [a["data-subscription"] for a in dom.find("section", "subscription")] == ["east", "west"]
    assert "DIVERGED" in dom.text and "missing" in dom.text
    # hatch patterns are per timeline: ids never collide
    ids = [a["id"] for _, a, _ in dom.elements if "id" in a]
    assert len(ids) == len(set(ids))


def test_a_report_before_the_timeline_says_so_and_keeps_its_reset_log():
    dom = check_page(render_run(load("schema1")))
    assert "no timeline recorded" in dom.text and "no throughput series recorded" in dom.text
    assert not dom.find("g", "lane") and not dom.find("svg")
    assert "Number of subscription streams has been reset from 4 to 1 (round 6: duplicate_key)" in dom.text


def test_an_empty_timeline_says_no_timeline_recorded():
    assert "no timeline recorded" in timeline_svg({}, 4)
    assert "no timeline recorded" in timeline_svg(None, 4)
    assert "no timeline recorded" in timeline_svg({"rounds": [], "segments": [], "streams": 4}, 4)


def test_truncated_timeline_is_said_and_fatal_rounds_are_drawn():
    report = load("converged")
    report["timeline"]["truncated"] = True
    report["timeline"]["rounds"][-1]["kind"] = "fatal"
    dom = check_page(render_run(report))
    assert "truncated" in dom.text
    assert len(dom.find("g", "round", data_kind="fatal")) == 1 and "fatal round" in dom.text


def test_throughput_series_inside_the_timeline_is_drawn_too():
    report = load("converged")
    report["timeline"]["throughput"] = report.pop("throughput_series")
    dom = check_page(render_run(report))
    assert len(dom.find("svg", "throughput")) == 1


def _hostile_run() -> dict[str, Any]:
    report = copy.deepcopy(load("diverged"))
    report["subscription"] = HOSTILE
    report["reason"] = HOSTILE
    report["target"] = HOSTILE
    report["source"] = HOSTILE
    report["conflicts"] = {HOSTILE: 3}
    report["versions"] = {"applier": HOSTILE}
    report["settings"]["run"]["model"] = HOSTILE
    report["reset_log"] = [
        {
            "round": 1,
            "streams_from": 4,
            "classes": [HOSTILE],
            "streams": [{"stream": 1, "class": HOSTILE}],
            "message": HOSTILE,
        },
        HOSTILE,
    ]
    for d in report["divergent"]:
        d["article"] = HOSTILE
        d["key"] = [HOSTILE]
        d["columns"] = [HOSTILE]
        d["found"] = {"qty": HOSTILE}
        for c in d["commands"]:
            c["key_before"] = HOSTILE
            c["outcome"] = HOSTILE
    report["divergent"][0]["inverted"]["why"] = HOSTILE
    seg = report["timeline"]["segments"][0]
    seg.update(outcome="conflict", **{"class": HOSTILE})
    report["timeline"]["rounds"] = [
        {"round": HOSTILE, "kind": HOSTILE, "start": 0, "end": 0.2, "classes": [HOSTILE]}
    ]
    report["parallelism"] = _parallelism(HOSTILE)
    return report


def _parallelism(text: str = "dbo.accounts") -> dict[str, Any]:
    """Why most rounds reset (applier.results.Parallelism.to_json), ``text`` where a report's
    values go (an article's name, a key)."""
    cmd = {"lsn": 7, "xact_seqno": 3, "article": text, "op": "U", "stream": 1, "round": 0}
    return {
        "reason": f"17 of 17 rounds reset to one stream: 53 commands depended on {text}",
        "advice": [f"--commit-batch-size 10: {text}", "--model independent --partition writeset: ..."],
        "dependent": 53,
        "rounds": 17,
        "resets_explained": 17,
        "within_transaction": 0,
        "kinds": [
            {
                "kind": "key_move",
                "what": text,
                "conflict": "row not found, 20598",
                "commands": 53,
                "rounds": 17,
                "example": {
                    "article": text,
                    "key": "[2]",
                    "depends_on": {**cmd, "key_before": "[1]", "key_after": "[2]"},
                    "command": {**cmd, "lsn": 9, "stream": 2, "key_before": "[2]", "key_after": text},
                },
            }
        ],
        "batches": [{"commit_batch_size": 10, "rounds": 170, "rounds_with": 12, "commands": 12}],
    }


def test_why_the_rounds_reset_is_a_section_with_the_reason_the_advice_and_an_example():
    report = {**copy.deepcopy(load("converged")), "parallelism": _parallelism()}
    dom = check_page(render_run(report))
    (why,) = dom.find("p", "why", id="resets-why")
    shown = dom.text
    assert "Why the rounds reset" in shown and report["parallelism"]["reason"] in shown
    assert "--commit-batch-size 10: dbo.accounts" in shown
    assert "U key [1] -> [2]" in shown and "lsn 7 xact 3 stream 1 round 0" in shown
    assert len(dom.find("table", "kinds")) == 1 and len(dom.find("table", "batches")) == 1
    # a run whose rounds did not mostly reset has no such section
    assert "Why the rounds reset" not in render_run(load("converged"))


def test_hostile_text_is_escaped_everywhere():
    text = render_run(_hostile_run())
    dom = check_page(text)  # no script, no img, no on* attribute came through
    assert "<script>" not in text and "<img" not in text
    assert text.count("&lt;script&gt;") >= 10
    shown = dom.text
    assert shown.count('<script>alert("x")</script>') >= 10  # shown as text, as it was
    multi = {"verdict": "diverged", "subscriptions": [_hostile_run()]}
    check_page(render_run(multi))
    assert "<script>" not in render_run(multi)


def _hostile(where: str) -> str:
    """Text that is markup if it is printed as it is: a script, an element whose attribute breaks
    out of its quotes, an entity already escaped once, and each character HTML escapes."""
    return f"<script>alert('{where}')</script><b title=\"{where}\" onclick='x'>&amp;\"'<>"


def _sub_places() -> dict[str, Any]:
    """Where a subscription's report holds text from outside applier (an article, a key, a column,
    an error message, a conflict class, a name): each place puts its own hostile value there and
    says how the page shows it."""

    def put(*path: Any, shown: Any = None) -> Any:
        def place(report: dict[str, Any], v: str) -> str:
            at = report
            for p in path[:-1]:
                at = at[p]
            at[path[-1]] = v if shown is None else shown(v)
            return v

        return place

    def rekey(*path: Any) -> Any:
        # a mapping's key (an article of by_article, a phase, a version) with the first one's value
        def place(report: dict[str, Any], v: str) -> str:
            at = report
            for p in path:
                at = at[p]
            at[v] = next(iter(at.values()))
            return v

        return place

    def reset_round(report: dict[str, Any], v: str) -> str:
        report["timeline"]["rounds"] = [{"round": v, "kind": "reset", "start": 0, "end": 0.9, "classes": []}]
        return v

    def reset_log(field: str) -> Any:
        def place(report: dict[str, Any], v: str) -> str:
            entry = {"round": 1, "streams_from": 4, "classes": ["deadlock"], "message": "m"}
            entry["streams"] = [{"stream": 1, "class": v if field == "class" else "deadlock", "lsn": 7}]
            if field != "class":
                entry[field] = [v] if field == "classes" else v
            report["reset_log"] = [entry]
            return v

        return place

    def parallelism(*path: Any) -> Any:
        def place(report: dict[str, Any], v: str) -> str:
            report["parallelism"] = _parallelism()
            return put("parallelism", *path)(report, v)

        return place

    def json_shown(report: dict[str, Any], v: str) -> str:
        report["divergent"][0]["found"] = {"qty": v}
        return json.dumps({"qty": v}, ensure_ascii=False)

    return {
        "subscription name": put("subscription"),
        "reason": put("reason"),
        "target": put("target"),
        "source": put("source"),
        "model setting": put("settings", "run", "model"),
        "error policy setting": put("settings", "run", "error_policy"),
        "conflict class": put("conflicts", shown=lambda v: {v: 3}),
        "phase name": rekey("phases_seconds"),
        "divergent kind": put("divergent", 0, "kind"),
        "divergent article": put("divergent", 0, "article"),
        "divergent key": put("divergent", 0, "key", shown=lambda v: [v]),
        "divergent column": put("divergent", 0, "columns", shown=lambda v: [v]),
        "divergent value": json_shown,
        "why inverted": put("divergent", 0, "inverted", "why"),
        "skipped lsn": put("divergent", 0, "skipped", shown=lambda v: [v]),
        "command key before": put("divergent", 0, "commands", 0, "key_before"),
        "command key after": put("divergent", 0, "commands", 0, "key_after"),
        "command outcome": put("divergent", 0, "commands", 0, "outcome"),
        "article of by_article": rekey("by_article"),
        "reset message": reset_log("message"),
        "reset round": reset_log("round"),
        "reset classes": reset_log("classes"),
        "reset stream class": reset_log("class"),
        "round on the timeline": reset_round,
        "class on the timeline": put("timeline", "segments", 0, "class"),
        "outcome on the timeline": put("timeline", "segments", 1, "outcome"),
        "per-stream column": rekey("streams", 0),
        "why rounds reset": parallelism("reason"),
        "advice": parallelism("advice", 0),
        "dependency kind": parallelism("kinds", 0, "what"),
        "example article": parallelism("kinds", 0, "example", "article"),
        "example key": parallelism("kinds", 0, "example", "key"),
        "example command's article": parallelism("kinds", 0, "example", "command", "article"),
        "example command's key": parallelism("kinds", 0, "example", "command", "key_after"),
        "version": rekey("versions"),
        "started at": put("started_at"),
    }


@pytest.mark.parametrize("where", list(_sub_places()))
def test_hostile_text_reaches_the_page_escaped_in_each_place(where: str) -> None:
    report = copy.deepcopy(load("diverged"))
    v = _hostile(where)
    shown = _sub_places()[where](report, v)
    for page in (
        render_run(report),
        render_run({"verdict": "diverged", "reason": "r", "subscriptions": [report]}),
    ):
        dom = check_page(page)  # no script, no b, no on* attribute came through
        assert not dom.find("b", title=where)
        assert shown not in page  # never as it is
        assert html.escape(shown, quote=True) in page  # escaped once: the &amp; in it twice
        # read back, the page shows the text as it was, in an element's text or an attribute
        attributes = [x for _, a, _ in dom.elements for x in a.values()]
        assert any(shown in t for t, _ in dom.texts) or any(shown in x for x in attributes)


@pytest.mark.parametrize(
    ("kind", "place"),
    [
        ("matrix", lambda d, v: d["rows"][0].update(workload=v)),  # a workload's name
        ("matrix", lambda d, v: d["rows"][0].update(reason=v)),  # an error message
        ("matrix", lambda d, v: d["rows"][0].update(conflicts={v: 2})),  # a conflict class
        ("matrix", lambda d, v: d["rows"][0].update(verdict=v)),  # a verdict of another version
        ("bench", lambda d, v: d["bench"].update(machine={"node": v})),  # the machine's name
        ("bench", lambda d, v: d["runs"].update({v: d["runs"]["on"]})),  # a setting's name
        ("bench", lambda d, v: d["goals"][0].update(name=v)),  # a goal
    ],
)
def test_hostile_text_reaches_the_matrix_and_bench_pages_escaped(kind: str, place: Any) -> None:
    doc = _matrix() if kind == "matrix" else _bench()
    v = _hostile(kind)
    place(doc, v)
    page = render_matrix(doc) if kind == "matrix" else render_bench(doc)
    dom = check_page(page)
    assert not dom.find("b", title=kind) and v not in page
    assert html.escape(v, quote=True) in page
    attributes = [x for _, a, _ in dom.elements for x in a.values()]
    assert any(v in t for t, _ in dom.texts) or any(v in x for x in attributes)


def _matrix() -> dict[str, Any]:
    base = {"partition": "key-hash", "model": "agent", "policy": "strict"}
    return {
        "streams": 4,
        "transactions": 320,
        "rows": [
            {
                **base,
                "workload": "key-chain",
                "verdict": "converged",
                "conflicts": {"row_not_found": 3},
                "resets": 2,
                "deferred": 0,
                "skipped": 0,
                "divergent_rows": 0,
                "inverted_pairs": 0,
                "throughput_cmds_per_s": 2100.5,
            },
            {
                **base,
                "workload": "reorder",
                "model": "independent",
                "verdict": "diverged",
                "conflicts": {},
                "resets": 0,
                "deferred": 0,
                "skipped": 0,
                "divergent_rows": 12,
                "inverted_pairs": 12,
                "throughput_cmds_per_s": 3000.0,
            },
            {**base, "workload": "hot-key", "partition": "writeset", "verdict": "n/a", "reason": HOSTILE},
            {**base, "workload": HOSTILE, "verdict": "unknown", "reason": "lost connection"},
        ],
    }


def test_matrix_table_one_row_per_cell_verdicts_coloured():
    text = render_matrix(_matrix())
    dom = check_page(text)
    cells = dom.find("tr", "cell")
    assert [c["data-verdict"] for c in cells] == ["converged", "diverged", "n/a", "unknown"]
    badges = dom.find("span", "v")
    colours = {b["style"] for b in badges}
    assert {"background:#1a7f37", "background:#cf222e", "background:#9a6700"} <= colours
    assert "row_not_found 3" in dom.text and "2,100" in dom.text and "lost connection" in dom.text
    assert "<script>" not in text and 'alert("x")' in dom.text


def _bench() -> dict[str, Any]:
    on = SyncRun("on", native=Measure(1000, 10.0))
    on.per_n[1] = PerN(ceiling=Measure(1000, 5.0), apply=Measure(1000, 8.0), end_to_end=Measure(1000, 20.0))
    on.per_n[4] = PerN(ceiling=Measure(1000, 2.0), apply=Measure(1000, 2.5), end_to_end=Measure(1000, 4.0))
    for p in on.per_n.values():
        p.verdict = "converged"
    off = SyncRun("off", native=Measure(1000, 2.0))
    off.per_n[4] = PerN(ceiling=Measure(1000, 1.0), apply=Measure(1000, 4.0), set_apply=Measure(1000, 1.5))
    off.per_n[4].verdict = "diverged"
    meta = {"commands": 1000, "transaction_size": 100, "rows": 10, "machine": {"node": HOSTILE}}
    return report_json(meta, {"on": on, "off": off}, 4)


def test_bench_table_goals_and_inline_plots():
    text = render_bench(_bench())
    dom = check_page(text)
    rows = [t for t, up in dom.texts if up[-2:] == ["tr", "td"] and t in ("on", "off")]
    assert rows == ["on", "on", "off"]
    plots = dom.find("svg", "bench-plot")
    assert len(plots) == 2  # one per synchronous_commit setting
    # on: ceiling, apply, end to end at N = 1 and 4; off: ceiling, apply, set apply at N = 4
    assert len(dom.find("g", "series")) == 6 and len(dom.find("circle")) == 3 * 2 + 3
    assert len(dom.find("line", "native")) == 2
    assert "0.80" in dom.text and "MISSED (short by 50%)" in dom.text  # a ratio, a missed goal
    assert "<script>" not in text


@pytest.mark.parametrize("name", ["converged", "diverged", "failed_early", "multi", "schema1"])
def test_every_fixture_renders_a_standalone_page(name: str):
    text = render_run(load(name))
    check_page(text)
    assert "<style>" in text and "http" not in text.replace("http-equiv", "")


# -- the commands' --html / --junit (the runs replaced: no Spark, no database) --------------------


class _Target:
    description = "no target (unit test)"

    def __enter__(self) -> _Target:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _args(*argv: str):  # type: ignore[no-untyped-def]
    from applier.cli import parser

    return parser().parse_args(list(argv))


def test_matrix_writes_its_html_and_junit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import applier
    import applier.matrix

    doc = _matrix()
    monkeypatch.setattr(applier.Target, "parse", staticmethod(lambda spec: _Target()))
    monkeypatch.setattr(applier.matrix, "run_matrix", lambda *a, **k: doc["rows"])
    html_path, junit_path = tmp_path / "out" / "m.html", tmp_path / "out" / "m.xml"
    a = _args("matrix", "--workloads", "key-chain", "--html", str(html_path), "--junit", str(junit_path))
    assert a.func(a) == 1  # an unknown cell fails the matrix
    dom = check_page(html_path.read_text(encoding="utf-8"))
    assert len(dom.find("tr", "cell")) == 4
    assert junit_path.read_text(encoding="utf-8").startswith("<?xml")
    out = capsys.readouterr().out
    assert f"HTML report: {html_path}" in out and f"JUnit XML: {junit_path}" in out


@pytest.mark.parametrize("command", ["matrix", "bench"])
def test_a_folder_given_as_html_file_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import applier.bench.command
    import applier.matrix
    from applier.errors import ConfigError

    def never(*a: Any, **k: Any) -> Any:
        raise AssertionError("ran")

    monkeypatch.setattr(applier.matrix, "run_matrix", never)
    monkeypatch.setattr(applier.bench.command, "run_bench", never)
    a = _args(command, "--html", str(tmp_path))
    with pytest.raises(ConfigError, match="--html .*a folder"):
        a.func(a)


def test_bench_writes_its_html(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import applier.bench.command
    import applier.bench.plot

    monkeypatch.setattr(applier.bench.command, "run_bench", lambda *a, **k: _bench())
    monkeypatch.setattr(applier.bench.plot, "plot", lambda doc, path: None)  # no matplotlib needed
    page = tmp_path / "b.html"
    a = _args("bench", "--commands", "1000", "--out", str(tmp_path / "bench"), "--html", str(page), "-q")
    assert a.func(a) == 2  # off N=4 diverged in the figures
    dom = check_page(page.read_text(encoding="utf-8"))
    assert len(dom.find("svg", "bench-plot")) == 2
    assert f"html: {page}" in capsys.readouterr().out
