"""Assertions on a :class:`~applier.results.RunResult` for tests (the pytest plugin's too).

:func:`assert_converged` fails with what a CI log should show: the verdict, the divergent rows
by kind, and for each divergent key shown (the first ten) its article, key and kind, the
inverted pair's "why", and the commands that touched it (lsn, transaction, operation, keys,
stream, round, outcome)::

    from applier.testing import assert_converged

    result = applier.run(config, target)
    assert_converged(result)

Nothing here talks to Spark or a database: the message is built from the result alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from applier.results import Divergence, RunResult, SubscriptionResult, Verdict

__all__ = ["SHOW", "assert_converged", "describe"]

SHOW = 10  # divergent keys described in a failure message


def assert_converged(result: RunResult, *, show: int = SHOW) -> None:
    """Raise AssertionError, with :func:`describe`'s text, unless every subscriber converged."""
    __tracebackhide__ = True  # pytest shows the message, not this frame
    if result.verdict is not Verdict.CONVERGED:
        raise AssertionError(describe(result, show=show))


def describe(result: RunResult, *, show: int = SHOW) -> str:
    """The run in a few lines: verdict, divergent rows by kind, each subscriber's figures, and
    the first ``show`` divergent keys with their blame."""
    lines = [
        f"applier run {result.verdict.value.upper()} (exit code {result.exit_code}){_counts(result.counts)}"
    ]
    # the lost rows first: a missing key is what a subscriber failed to apply
    divergent = sorted(result.divergent, key=lambda sd: _KINDS.get(sd[1].kind, len(_KINDS)))
    shown = divergent[:show]
    named = len(result.subscriptions) > 1
    for kind in _KINDS:  # the keys next to the verdict: a JUnit message keeps its first lines
        keys = [_key(d, sub if named else None) for sub, d in shown if d.kind == kind]
        if keys:
            lines.append(f"{kind} keys: {', '.join(keys)}")
    for s in result.subscriptions:
        lines += _subscription(s, named)
    if result.files.get("json"):
        lines.append(f"report: {result.files['json']}")
    if shown:
        total = sum(s.check.divergent_rows for s in result.subscriptions)
        of = f"the first {len(shown)} of {total}" if total > len(shown) else f"all {len(shown)}"
        lines.append(f"divergent keys ({of}) and the commands that touched them:")
        for sub, d in shown:
            lines += _divergence(d, sub if named else None)
    return "\n".join(lines)


_KINDS = {"missing": 0, "different": 1, "extra": 2}


def _key(d: Divergence, sub: str | None) -> str:
    return f"{d.article} ({', '.join(repr(k) for k in d.key)})" + (f" in {sub!r}" if sub else "")


def _counts(counts: Mapping[str, int]) -> str:
    total = sum(counts.values())
    if not total:
        return ""
    kinds = ", ".join(f"{k} {counts[k]}" for k in ("missing", "extra", "different") if counts.get(k))
    return f": {total} divergent row{'s' if total != 1 else ''} ({kinds})"


def _subscription(s: SubscriptionResult, named: bool) -> list[str]:
    c, m = s.check, s.summary
    head = f"subscription {s.name!r} on {s.target}: {s.verdict.value}" if named else f"target: {s.target}"
    lines = [head]
    conflicts = ", ".join(f"{k} {v}" for k, v in m.conflicts.items() if v) or "none"
    lines.append(
        f"  rows expected / found {c.rows_expected} / {c.rows_found}; commands {m.commands}, "
        f"transactions {m.transactions}, streams {m.streams}, rounds {m.rounds}, "
        f"resets to one stream {m.resets}; conflicts {conflicts}"
    )
    if m.skipped:
        lines.append(f"  skipped commands {m.skipped}")
    for why in (c.reason, s.failed, m.stopped):
        if why:
            lines.append(f"  why: {why}")
    return lines


def _divergence(d: Divergence, sub: str | None) -> list[str]:
    lines = [f"  {d.kind} {_key(d, sub)}"]
    if d.kind == "different" and d.columns:
        diffs = ", ".join(
            f"{c}: expected {_value(d.expected, c)}, found {_value(d.found, c)}" for c in d.columns
        )
        lines.append(f"      columns {diffs}")
    if d.inverted:
        lines.append(f"      inverted pair: {d.inverted.get('why', d.inverted)}")
    if not d.commands:
        lines.append("      no command touched this key (the snapshot's row)")
    for cmd in d.commands:
        lines.append(f"      {_command(cmd)}")
    return lines


def _value(row: Mapping[str, Any] | None, column: str) -> str:
    return "(no row)" if row is None else repr(row.get(column))


def _keytext(key: Any) -> str:
    if key is None:
        return "-"
    if isinstance(key, (list, tuple)):
        return "(" + ", ".join(repr(k) for k in key) + ")"
    return repr(key)


def _command(c: Mapping[str, Any]) -> str:
    keys = f"{_keytext(c.get('key_before'))} -> {_keytext(c.get('key_after'))}"
    text = (
        f"lsn {c.get('lsn')} xact {c.get('xact_seqno')} {c.get('op')} {keys} "
        f"stream {c.get('stream')} round {c.get('round')}: {c.get('outcome') or '?'}"
    )
    return text + (f" [{c['via']}]" if c.get("via") else "")
