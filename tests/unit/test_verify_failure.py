"""A verification that fails says why on one line: a row that cannot be read back names its
article, column and key; any other failure its kind and first line, found in Spark's error
text (which holds the Python worker's whole traceback) rather than Spark's preamble."""

from __future__ import annotations

import datetime as dt

import pytest

from applier.articles import Article, Column, parse_type
from applier.values import ValueError_, encode
from applier.verify.target import failure_reason, unreadable

ORDERS = Article(
    "dbo",
    "orders",
    (
        Column("id", parse_type("int"), False),
        Column("at", parse_type("datetimeoffset(6)"), False),
        Column("qty", parse_type("tinyint")),
    ),
    ("id", "at"),
)


def _refused(column: int, value: object) -> ValueError_:
    with pytest.raises(ValueError_) as e:
        encode(ORDERS.columns[column], value)
    return e.value


def _worker_text(last: str, cause: str = "") -> str:
    """What str() of Spark's PythonException holds when a read task raised."""
    return (
        "An exception was thrown from the Python worker:\n"
        "Traceback (most recent call last):\n"
        '  File "/x/applier/verify/target.py", line 139, in read\n'
        "    img = {n: enc(r[i]) for i, n, enc in cols}\n"
        f"{cause}"
        f"{last}\n"
    )


def test_a_refused_value_names_article_column_and_key() -> None:
    row = (3, "2024-03-10T06:00:00.000000+00:00", 300)
    e = unreadable(ORDERS, row, _refused(2, 300))
    assert str(e) == (
        "could not check article 'dbo.orders': column 'qty' (tinyint) at key "
        '[3, "2024-03-10T06:00:00.000000+00:00"]: out of range 0..255, got 300'
    )


def test_a_refused_key_value_is_shown_as_the_driver_gave_it() -> None:
    naive = dt.datetime(2024, 3, 10, 6, 0)
    e = unreadable(ORDERS, (3, naive, 1), _refused(1, naive))
    assert str(e) == (
        "could not check article 'dbo.orders': column 'at' (datetimeoffset(6)) at key "
        '[3, "datetime.datetime(2024, 3, 10, 6, 0)"]: expected a datetime with offset, '
        "got datetime.datetime(2024, 3, 10, 6, 0)"
    )


def test_a_read_that_fails_names_the_article_on_one_line() -> None:
    driver = RuntimeError("ODBC SQL type -155 is not yet supported.\n  column-index=1  type=-155")
    assert str(unreadable(ORDERS, None, driver)) == (
        "could not check article 'dbo.orders': RuntimeError: ODBC SQL type -155 is not yet "
        "supported. column-index=1 type=-155"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # a read task's Unreadable, as Spark carries it back (with the cause printed first)
        (
            _worker_text(
                "applier.verify.target.Unreadable: could not check article 'dbo.orders': column 'qty' "
                "(tinyint) at key [3]: out of range 0..255, got 300",
                cause="pyodbc.Error: x\n\nThe above exception was the direct cause of the following exception:\n\n",
            ),
            "could not check article 'dbo.orders': column 'qty' (tinyint) at key [3]: out of range 0..255, got 300",
        ),
        # anything else a worker raised: its kind and message, not Spark's preamble
        (
            _worker_text("applier.values.ValueError_: column 'qty' (tinyint): out of range"),
            "verification failed: ValueError_: column 'qty' (tinyint): out of range",
        ),
        (
            _worker_text("ZeroDivisionError: division by zero"),
            "verification failed: ZeroDivisionError: division by zero",
        ),
    ],
)
def test_the_reason_of_a_worker_failure_is_its_last_line(text: str, reason: str) -> None:
    got = failure_reason(RuntimeError(text))
    assert got == reason and "\n" not in got and "Traceback" not in got


def test_the_reason_of_a_driver_failure_is_its_first_line() -> None:
    assert failure_reason(KeyError("dbo.gone")) == "verification failed: KeyError: 'dbo.gone'"
    assert failure_reason(OSError("no room\nmore\nlines")) == "verification failed: OSError: no room"
    assert len(failure_reason(ValueError("x" * 2000))) == 500
