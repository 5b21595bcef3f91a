"""JUnit XML of a run and of a matrix, as CI systems read it (Jenkins, GitLab, GitHub's
test reporters): ``<testsuites>`` of ``<testsuite>`` of ``<testcase>``, a ``<failure>`` for a
test that ran and found something wrong, an ``<error>`` for one that could not decide.

A run: one testsuite per subscription. Its testcases: ``apply`` (an error when the apply
stopped before the end: a failure on the single connection, transient errors past every
retry) and one ``<article> converges`` per article (a failure carrying the divergent keys,
the commands that touched each with their stream, round and outcome, and the inverted pair;
an error when the check could not decide). A run that ended before its verdict is one
testsuite with one errored testcase ``run`` saying why. A matrix: one testcase per cell.

Rendered from the JSON report (:mod:`applier.report.json`), never from live objects: what
CI shows is what the report says.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from applier.report.json import reset_line, verify_line

_KINDS = ("missing", "extra", "different")
_SHOWN_KEYS = 20  # divergent keys listed in one failure's text


def _subscriptions(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The per-subscription reports (a plain run's report is its one subscription's)."""
    if "subscriptions" in report:
        return list(report["subscriptions"])
    return [report]


def _time(x: Any) -> str:
    return f"{float(x or 0.0):.3f}"


def _timestamp(report: Mapping[str, Any]) -> str | None:
    """Ant's timestamp: ISO 8601 without the zone (the report's is UTC)."""
    t = report.get("started_at")
    return str(t).rstrip("Z") if t else None


def _article_names(sub: Mapping[str, Any]) -> list[str]:
    """Every article the subscription takes: the configured ones (or its own list), and any
    the check found rows of."""
    settings = sub.get("settings") or {}
    names = [f"{a['schema']}.{a['table']}" for a in settings.get("articles") or () if "table" in a]
    for s in settings.get("subscriptions") or ():
        if s.get("name") == sub.get("subscription") and s.get("articles") is not None:
            names = [a["name"] for a in s["articles"]]
    names += [n for n in (sub.get("by_article") or {}) if n not in names]
    names += [d["article"] for d in sub.get("divergent") or () if d["article"] not in names]
    return names


def command_line(c: Mapping[str, Any]) -> str:
    """One command of a divergent key's history."""
    return (
        f"lsn {c.get('lsn')} xact {c.get('xact_seqno')} {c.get('op')} {c.get('key_before')} -> "
        f"{c.get('key_after')} stream {c.get('stream')} round {c.get('round')}: {c.get('outcome') or '?'}"
    )


def divergence_text(d: Mapping[str, Any]) -> str:
    """A divergent key with its blame, as a failure's text shows it."""
    lines = [
        f"{d['kind']} {d['article']} key {d['key']}"
        + (f" columns {d['columns']}" if d.get("columns") else "")
    ]
    if d.get("expected") is not None or d.get("found") is not None:
        lines.append(f"  expected {d.get('expected')}")
        lines.append(f"  found    {d.get('found')}")
    streams = sorted({c.get("stream") for c in d.get("commands") or () if c.get("stream") is not None})
    if streams:
        lines.append(f"  streams {streams}")
    lines += [f"  {command_line(c)}" for c in d.get("commands") or ()]
    if d.get("inverted"):
        lines.append(f"  inverted pair: {d['inverted'].get('why')}")
    return "\n".join(lines)


def _counts_text(counts: Mapping[str, int]) -> str:
    n = sum(counts.get(k, 0) for k in _KINDS)
    return f"{n} divergent rows (" + ", ".join(f"{k} {counts.get(k, 0)}" for k in _KINDS) + ")"


def _testcase(parent: ET.Element, classname: str, name: str, seconds: Any) -> ET.Element:
    return ET.SubElement(parent, "testcase", classname=classname, name=name, time=_time(seconds))


def _suite(root: ET.Element, name: str, report: Mapping[str, Any], seconds: Any) -> ET.Element:
    attrs = {
        "name": name,
        "tests": "0",
        "failures": "0",
        "errors": "0",
        "skipped": "0",
        "time": _time(seconds),
    }
    if (ts := _timestamp(report)) is not None:
        attrs["timestamp"] = ts
    attrs["hostname"] = socket.gethostname()
    return ET.SubElement(root, "testsuite", attrs)


def _properties(suite: ET.Element, props: Sequence[tuple[str, Any]]) -> None:
    el = ET.SubElement(suite, "properties")
    for k, v in props:
        if v is not None:
            ET.SubElement(el, "property", name=k, value=str(v))


def _count(suite: ET.Element) -> tuple[int, int, int]:
    """Set the suite's tests / failures / errors from its testcases; return them."""
    cases = suite.findall("testcase")
    failures = sum(1 for c in cases if c.find("failure") is not None)
    errors = sum(1 for c in cases if c.find("error") is not None)
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    return len(cases), failures, errors


_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    """Characters XML 1.0 cannot carry (a driver's message may hold them) as \\xNN."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _finish(root: ET.Element) -> str:
    for el in root.iter():
        if el.text:
            el.text = _clean(el.text)
        for k, v in el.attrib.items():
            el.attrib[k] = _clean(v)
    totals = [0, 0, 0]
    for suite in root.findall("testsuite"):
        for i, n in enumerate(_count(suite)):
            totals[i] += n
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", str(totals[2]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _versions(report: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(f"version.{k}", v) for k, v in (report.get("versions") or {}).items()]


def run_junit(report: Mapping[str, Any]) -> str:
    """The JUnit XML of a run's JSON report."""
    root = ET.Element("testsuites", name="applier run", time=_time(report.get("seconds")))
    subs = _subscriptions(report)
    if not subs:  # ended before its verdict
        suite = _suite(root, "applier", report, report.get("seconds"))
        _properties(
            suite, [("verdict", report.get("verdict")), ("phase", report.get("phase")), *_versions(report)]
        )
        case = _testcase(suite, "applier", "run", report.get("seconds"))
        reason = str(report.get("reason") or "the run ended before its verdict")
        ET.SubElement(case, "error", message=reason.splitlines()[0][:500], type="unknown").text = reason
        return _finish(root)
    for sub in subs:
        name = str(sub.get("subscription") or "applier")
        classname = f"applier.{name}"
        phases = sub.get("phases_seconds") or {}
        suite = _suite(root, classname, report, sum(phases.values()) if phases else report.get("seconds"))
        run = (sub.get("settings") or {}).get("run") or {}
        workload = (sub.get("settings") or {}).get("workload") or {}
        _properties(
            suite,
            [
                ("verdict", sub.get("verdict")),
                ("target", sub.get("target")),
                ("source", sub.get("source")),
                ("streams", run.get("streams")),
                ("model", run.get("model")),
                ("partition", run.get("partition")),
                ("commit_batch_size", run.get("commit_batch_size")),
                ("error_policy", run.get("error_policy")),
                ("schedule", run.get("schedule")),
                ("seed", workload.get("seed")),
                ("commands", sub.get("commands")),
                ("rounds", sub.get("rounds")),
                ("resets", sub.get("resets")),
                ("resets_why", (sub.get("parallelism") or {}).get("reason")),
                *[(f"conflicts.{k}", v) for k, v in (sub.get("conflicts") or {}).items() if v],
                ("throughput_cmds_per_s", sub.get("throughput_cmds_per_s")),
                ("verify", verify_line(sub.get("verify")) if sub.get("verify") else None),
                *_versions(report),
            ],
        )
        apply = _testcase(suite, classname, "apply", phases.get("apply"))
        stopped = sub.get("apply_stopped")
        if "apply_stopped" not in sub:  # a report written before the field: the reason of an unknown
            stopped = sub.get("reason") if sub.get("verdict") == "unknown" else None
        if stopped:
            ET.SubElement(apply, "error", message=str(stopped)[:500], type="stopped").text = str(stopped)
        by_article = sub.get("by_article") or {}
        divergent = list(sub.get("divergent") or ())
        undecided = sub.get("verdict") == "unknown" and not by_article
        articles = _article_names(sub)
        for article in articles:
            # the verification checks every article at once: its time is shared out
            verify_s = (phases.get("verify") or 0.0) / max(len(articles), 1)
            case = _testcase(suite, classname, f"{article} converges", verify_s)
            counts = by_article.get(article) or {}
            if undecided:
                why = str(sub.get("reason") or "the check could not decide")
                ET.SubElement(case, "error", message=f"not checked: {why}"[:500], type="unknown").text = why
                continue
            # read whole because rows outside the stream's keys changed (applier.verify.scope)
            rest = ((sub.get("verify") or {}).get("articles") or {}).get(article) or {}
            if rest.get("rest") == "changed" and not any(counts.get(k, 0) for k in _KINDS):
                why = str(sub.get("reason") or "rows outside the stream's keys changed")
                ET.SubElement(case, "failure", message=why[:1000], type="diverged").text = why
                continue
            if not any(counts.get(k, 0) for k in _KINDS):
                continue
            mine = [d for d in divergent if d["article"] == article]
            head = f"{article}: {_counts_text(counts)}"
            keys = ", ".join(str(d["key"]) for d in mine[:10])
            message = head + (f"; keys {keys}" if keys else "")
            text = [head]
            text += [divergence_text(d) for d in mine[:_SHOWN_KEYS]]
            shown = sum(counts.get(k, 0) for k in _KINDS)
            if shown > len(mine):
                text.append(f"({shown - len(mine)} more divergent rows not shown: see the JSON report)")
            ET.SubElement(case, "failure", message=message[:1000], type="diverged").text = "\n\n".join(text)
        out = ET.SubElement(suite, "system-out")
        out.text = "\n".join(_reset_lines(sub)) or None
    _thresholds(root, report)
    return _finish(root)


def _thresholds(root: ET.Element, report: Mapping[str, Any]) -> None:
    """A load test's thresholds: a testsuite ``applier.thresholds``, a testcase per threshold,
    a failure for each one broken (its value and limit)."""
    checked = report.get("thresholds") or ()
    if not checked:
        return
    suite = _suite(root, "applier.thresholds", report, 0.0)
    for th in checked:
        case = _testcase(suite, "applier.thresholds", str(th["threshold"]), 0.0)
        if th.get("held"):
            continue
        value = th.get("value")
        why = th.get("why") or f"measured {value:.6g}, limit {th['op']} {th.get('limit'):.6g}"
        ET.SubElement(
            case, "failure", message=f"{th['threshold']}: {why}"[:1000], type="threshold"
        ).text = f"threshold {th['threshold']} broken: {why}"


def _reset_lines(sub: Mapping[str, Any]) -> list[str]:
    """The reset log, then why most rounds reset and what would run in parallel (if they did)."""
    lines = [e if isinstance(e, str) else reset_line(e) for e in sub.get("reset_log") or ()]
    par = sub.get("parallelism")
    if par:
        lines.append(f"why they reset: {par['reason']}")
        lines += [f"to run in parallel: {a}" for a in par.get("advice") or ()]
    return lines


def matrix_junit(doc: Mapping[str, Any]) -> str:
    """The JUnit XML of ``applier matrix``'s rows: one testcase per cell, a failure for a
    diverged cell, an error for a cell that could not decide."""
    root = ET.Element("testsuites", name="applier matrix")
    suite = _suite(root, "applier.matrix", doc, None)
    _properties(suite, [("streams", doc.get("streams")), ("transactions", doc.get("transactions"))])
    for r in doc.get("rows") or ():
        name = f"{r['workload']} / {r['partition']} / {r['model']} / {r['policy']}"
        case = _testcase(suite, f"applier.matrix.{r['workload']}", name, r.get("seconds"))
        if r["verdict"] == "diverged":
            counts = r.get("divergence") or {}
            msg = f"{name}: {_counts_text(counts) if counts else str(r.get('divergent_rows')) + ' divergent rows'}"
            text = [msg] + [divergence_text(d) for d in (r.get("divergent") or ())[:_SHOWN_KEYS]]
            ET.SubElement(case, "failure", message=msg[:1000], type="diverged").text = "\n\n".join(text)
        elif r["verdict"] == "n/a":
            ET.SubElement(case, "skipped", message=str(r.get("reason") or "not supported"))
        elif r["verdict"] != "converged":
            why = str(r.get("reason") or "the cell could not decide")
            ET.SubElement(case, "error", message=why[:500], type="unknown").text = why
    return _finish(root)
