"""The HTML report's one Jinja environment: templates in ``applier/report/templates/``,
autoescaped, with the filters that turn a report's values into text.

Every value of a report is untrusted text (article names, keys and error messages can hold
markup). Whatever a template prints is escaped unless it is :class:`markupsafe.Markup` made by
a template of this environment (a chart, a macro): nothing has to remember to escape. ``None``
prints as nothing, as a missing value did in the f-string report. Values never reach a style
or an id: those hold our colours and our own counters only.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup

from applier.report.json import rounds_line

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


def class_colour(name: Any) -> str:
    """A class's colour: its own if known, else one of the spare palette by a stable hash."""
    n = str(name or "")
    if n in CLASS_COLOURS:
        return CLASS_COLOURS[n]
    return _SPARE[sum(n.encode("utf-8")) % len(_SPARE)]


def verdict_colour(v: Any) -> str:
    return VERDICT_COLOURS.get(str(v), VERDICT_COLOURS["unknown"])


# -- a report's values, read leniently (a report of another version renders, with gaps) --------


def as_map(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, list | tuple) else []


def as_float(x: Any, default: float = 0.0) -> float:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return default
    return f if math.isfinite(f) else default


def as_int(x: Any, default: int = 0) -> int:
    try:
        return int(x)
    except (TypeError, ValueError):
        return default


def is_numeric(x: Any) -> bool:
    """A number a report wrote (not a boolean, which Python counts as one)."""
    return isinstance(x, int | float) and not isinstance(x, bool)


def num(x: Any, digits: int = 0) -> str:
    """A figure with thousands separators, ``-`` for none; text stays as it is."""
    if isinstance(x, bool) or x is None:
        return "-" if x is None else str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return f"{x:,.{digits}f}" if math.isfinite(x) else str(x)
    return str(x)


def json_text(x: Any) -> str:
    """A row's values as JSON text, keys sorted (not Jinja's ``tojson``: this one is shown)."""
    return json.dumps(x, ensure_ascii=False, default=str, sort_keys=True)


def key_text(k: Any) -> str:
    """A key as the report holds it: text as it is, a one-column key without its brackets."""
    if isinstance(k, list | tuple) and len(k) == 1:
        k = k[0]
    return k if isinstance(k, str) else json.dumps(k, ensure_ascii=False, default=str)


def join_text(items: Any, sep: str) -> str:
    """Items as text, ``sep`` between them (none prints as nothing); escaped as a whole."""
    return sep.join("" if x is None else str(x) for x in items)


def _finalize(x: Any) -> Markup:
    """What a template prints: markup made by this environment (a macro's, a chart's) as it is,
    any other value as text escaped by the standard library (``&quot;`` and ``&#x27;``, the
    report's spelling before the templates; markupsafe spells them ``&#34;`` and ``&#39;``),
    None as nothing. Autoescape stays on behind it."""
    if isinstance(x, Markup):
        return x
    return Markup(html.escape("" if x is None else str(x), quote=True))


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("applier.report", "templates"),
        autoescape=True,  # every template here is HTML or SVG
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize,
    )
    env.filters.update(
        num=num,
        json_text=json_text,
        key_text=key_text,
        join_text=join_text,
        as_map=as_map,
        as_list=as_list,
        as_float=as_float,
        as_int=as_int,
        class_colour=class_colour,
        verdict_colour=verdict_colour,
        fmt=format,
        rounds_line=rounds_line,
    )
    env.tests["numeric"] = is_numeric
    return env


def render(template: str, **context: Any) -> Markup:
    """The template's output, marked safe: it was escaped as it was rendered."""
    return Markup(environment().get_template(template).render(**context))  # escaped as it was rendered
