"""Errors of a configuration in words: pydantic's validation errors as ``"{source}: {path}:
{message}"`` lines (:class:`Problems`), unknown keys of one table in one message, ranges said
as ranges; and how the file format's validators raise them (:class:`At`, :func:`checked`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from applier.errors import ConfigError


class At(ValueError):
    """A validator's error about a key below the table it checks."""

    def __init__(self, at: str, message: str) -> None:
        super().__init__(message)
        self.at = at


def checked(check: Callable[..., object], *args: Any) -> None:
    """Run a domain parser; its ConfigError becomes the validator's error."""
    try:
        check(*args)
    except ConfigError as e:
        raise ValueError(str(e)) from None


Loc = tuple[int | str, ...]
M = TypeVar("M", bound=BaseModel)
_TYPES = {
    "int_type": "int",
    "string_type": "str",
    "bool_type": "bool",
    "float_type": "float",
    "list_type": "list",
}


def _path(loc: Loc) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "top level"


def _model_in(tp: Any) -> type[BaseModel] | None:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp
    return next((m for m in map(_model_in, get_args(tp)) if m is not None), None)


def _fields_at(root: Any, loc: Loc) -> dict[str, FieldInfo]:
    """The fields, by the key a file uses, of the table at ``loc`` below ``root`` (a type)."""
    tp = root
    for part in loc:
        if isinstance(part, str):  # an int is a list index: _model_in looks into lists
            field = _fields_at(tp, ()).get(part)
            tp = field.annotation if field else None
    model = _model_in(tp)
    return {f.alias or n: f for n, f in model.model_fields.items()} if model else {}


def _message(err: ErrorDetails, loc: Loc, field: FieldInfo | None) -> tuple[Loc, str]:
    kind, value = err["type"], err["input"]
    got = f"got {type(value).__name__} {value!r}"
    if kind == "missing":
        return loc[:-1], f"missing required key {loc[-1]!r}"
    if kind in _TYPES:
        return loc, f"expected {_TYPES[kind]}, {got}"
    if kind in ("model_type", "dict_type"):
        return (
            loc,
            f"expected {'a table' if loc else 'a table with [run], [workload] and [[articles]]'}, {got}",
        )
    if kind == "too_short":
        return loc, "expected a non-empty list"
    if kind in ("greater_than_equal", "less_than_equal"):
        meta = field.metadata if field else []
        lo = next((m.ge for m in meta if hasattr(m, "ge")), None)
        hi = next((m.le for m in meta if hasattr(m, "le")), None)
        bounds = (
            f"{lo}..{hi}" if lo is not None and hi is not None else f">= {lo}" if hi is None else f"<= {hi}"
        )
        return loc, f"{loc[-1]} must be {bounds}, got {value!r}"
    error = (err.get("ctx") or {}).get("error")
    if isinstance(error, At):
        return (*loc, error.at), str(error)
    return loc, str(error) if kind == "value_error" else err["msg"]


class Problems:
    """Errors of one source, reported together: ``"{source}: {path}: {message}"`` a line."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[tuple[str, str]] = []

    def add(self, loc: Loc, message: str) -> None:
        self.items.append((_path(loc), message))

    def validate(self, root: Any, value: Any, prefix: Loc = ()) -> bool:
        """Validate ``value`` as a ``root`` (a model or list type) found at ``prefix``."""
        try:
            TypeAdapter(root).validate_python(value)
        except ValidationError as e:
            self._add_pydantic(e, root, prefix)
            return False
        return True

    def _add_pydantic(self, e: ValidationError, root: Any, prefix: Loc) -> None:
        """pydantic's errors in words; the unknown keys of one table in one message."""
        unknown: dict[Loc, list[str]] = {}
        found: list[tuple[Loc, str | list[str]]] = []  # a message, or the unknown keys of a table
        for err in e.errors():
            rel = tuple(err["loc"])
            if err["type"] != "extra_forbidden":
                field = _fields_at(root, rel[:-1]).get(str(rel[-1])) if rel else None
                found.append(_message(err, prefix + rel, field))
            elif rel[:-1] in unknown:
                unknown[rel[:-1]].append(str(rel[-1]))
            else:
                unknown[rel[:-1]] = [str(rel[-1])]
                found.append((rel[:-1], unknown[rel[:-1]]))
        for loc, what in found:
            if isinstance(what, str):
                self.add(loc, what)
            else:
                allowed = sorted(_fields_at(root, loc))
                self.add(prefix + loc, f"unknown key(s) {sorted(what)} (allowed: {allowed})")

    def check(self) -> None:
        """Raise one ConfigError naming every problem found."""
        if self.items:
            raise ConfigError("\n".join(f"{self.source}: {p}: {m}" for p, m in self.items))


def quiet(model: type[M], value: Any) -> M | None:
    """The table if it validates (its errors are reported by the validation of the whole)."""
    try:
        return model.model_validate(value)
    except ValidationError:
        return None
