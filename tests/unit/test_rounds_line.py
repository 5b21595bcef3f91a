"""The rounds row of the console and the HTML summary: the agent model's rounds on every stream,
or, for the independent model (no barrier, so no round is "parallel": the row read "500 (0 on 4
streams)"), what it did instead."""

from __future__ import annotations

from applier.report.json import rounds_line
from applier.report.markup import environment


def test_the_agent_model_says_how_many_rounds_ran_on_every_stream():
    report = {"rounds": 1500, "rounds_parallel": 259, "outcomes": {"applied": 10}}
    assert rounds_line(report, {"model": "agent", "streams": 4}) == "1,500 (259 on 4 streams)"


def test_the_independent_model_says_it_has_no_barrier_and_what_it_deferred():
    report = {"rounds": 500, "rounds_parallel": 0, "outcomes": {"applied": 1485, "deferred": 48515}}
    line = rounds_line(report, {"model": "independent", "streams": 4})
    assert line == (
        "500 commit batches, no barrier between the 4 streams (independent); "
        "48,515 commands deferred to one connection"
    )
    assert "0 on 4 streams" not in line


def test_the_html_summary_reads_the_same_line():
    sub = {"rounds": 500, "rounds_parallel": 0, "outcomes": {"deferred": 7}}
    template = environment().from_string("{{ sub|as_map|rounds_line(st|as_map) }}")  # as summary.html.j2
    html = template.render(sub=sub, st={"model": "independent", "streams": 2})
    assert "no barrier between the 2 streams (independent); 7 commands deferred" in html
