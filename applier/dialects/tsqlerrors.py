"""How T-SQL errors are classified: by SQL Server's native error number (pyodbc prints it as
``(NNNN)`` after the text; see :func:`native_code`) and SQLSTATE class 08 for lost connections,
never English text. :class:`applier.dialects.tsql.TsqlDialect` classifies through
:func:`classify` and :func:`ambiguous`.

Error 20598 (row not found) is raised by ``sp_MSreplraiserror``, or as 120598 by the stand-in
the dialect installs where the server has none (:data:`ROW_NOT_FOUND_THROWN`, see
:mod:`applier.dialects.tsql`): both are ROW_NOT_FOUND with code "20598", so error policies such
as ``2601:2627:20598`` apply to both.
"""

from __future__ import annotations

import re

from applier.dialects.conflicts import Classified, ConflictClass

ROW_NOT_FOUND = 20598
ROW_NOT_FOUND_THROWN = 120598  # THROW's number in the stand-in sp_MSreplraiserror (support_sql)
NO_TRANSACTION = 3903  # "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION"

# native error number -> (class, transient)
BY_NATIVE: dict[int, tuple[ConflictClass, bool]] = {
    ROW_NOT_FOUND: (ConflictClass.ROW_NOT_FOUND, False),
    ROW_NOT_FOUND_THROWN: (ConflictClass.ROW_NOT_FOUND, False),
    2601: (ConflictClass.UNIQUE_INDEX, False),  # duplicate key row in a unique index
    2627: (ConflictClass.DUPLICATE_KEY, False),  # PRIMARY KEY / UNIQUE constraint
    547: (ConflictClass.FOREIGN_KEY, False),  # statement conflicted with a FOREIGN KEY (or CHECK)
    1222: (ConflictClass.LOCK_TIMEOUT, True),  # lock request time out period exceeded: retried
    1205: (ConflictClass.DEADLOCK, True),  # chosen as deadlock victim: rerun the transaction
}
# Server-side numbers that mean the session is gone even when the SQLSTATE is not 08xxx.
_LOST_NATIVE = {
    233,  # no process is on the other end of the pipe
    596,  # session is in the kill state
    6005,  # SHUTDOWN is in progress
    10053,  # TCP: connection aborted by the software in the host
    10054,  # TCP: connection forcibly closed by the remote host
}
# Driver-side SQLSTATEs of a broken link (ODBC class 08: connection exception).
_LOST_STATE_PREFIX = "08"
# FreeTDS's "Unexpected EOF from the server" (TDSESEOF): the server closed the socket mid-reply.
_FREETDS_EOF = 20017


# pyodbc formats every diagnostic record as "[SQLSTATE] [vendor][driver][server]text (native)",
# appends " (SQLFunctionW)" to the first record only, and joins further records with "; ".
# Microsoft's ODBC drivers and FreeTDS both pass the server's message number as the native
# error, so the number is the "(NNNN)" closing the FIRST record; a "(1)" inside the text (for
# instance "The duplicate key value is (1).") is data, not the number.
_RECORD_SEP_RE = re.compile(r";\s*(?=\[[0-9A-Z]{5}\])")
_NATIVE_TAIL_RE = re.compile(r"\((-?\d+)\)\s*(?:\(SQL[A-Za-z]+\))?\s*$")


# The constraint or index a message names, by its place among the quoted names (the first
# diagnostic record only): 2627 "Violation of PRIMARY KEY constraint 'c'. Cannot insert
# duplicate key in object 't'"; 2601 "Cannot insert duplicate key row in object 't' with unique
# index 'i'"; 547 'The INSERT statement conflicted with the FOREIGN KEY constraint "c"'.
NAMED_AT: dict[int, tuple[re.Pattern[str], int]] = {
    2627: (re.compile(r"'([^']*)'"), 0),
    2601: (re.compile(r"'([^']*)'"), 1),
    547: (re.compile(r'"([^"]*)"'), 0),
}


def _constraint(
    native: int | None, message: str, named_at: dict[int, tuple[re.Pattern[str], int]]
) -> str | None:
    if native not in named_at:
        return None
    quoted, at = named_at[native]
    names = quoted.findall(_RECORD_SEP_RE.split(message, maxsplit=1)[0])
    return names[at] if len(names) > at else None


def native_code(message: str) -> int | None:
    """SQL Server's native error number as pyodbc prints it, or None (none, or 0)."""
    first = _RECORD_SEP_RE.split(message, maxsplit=1)[0]
    m = _NATIVE_TAIL_RE.search(first)
    if not m:
        return None
    n = int(m.group(1))
    return n if n > 0 else None


def classify(exc: BaseException, named_at: dict[int, tuple[re.Pattern[str], int]]) -> Classified:
    """pyodbc errors carry (sqlstate, message); the native number ends the message; ``named_at``:
    where a message names the constraint (:attr:`applier.dialects.tsql.TsqlDialect.CONSTRAINT_NAMED_AT`)."""
    args: tuple[object, ...] = tuple(getattr(exc, "args", ()))
    if len(args) >= 2:
        state, message = str(args[0]), str(args[1])
    else:
        state, message = "", str(args[0]) if args else str(exc)
    native = native_code(message)
    lost = state.startswith(_LOST_STATE_PREFIX) or native in _LOST_NATIVE
    if native in BY_NATIVE and not lost:
        cls, transient = BY_NATIVE[native]
        code = str(ROW_NOT_FOUND) if cls is ConflictClass.ROW_NOT_FOUND else str(native)
        return Classified(
            cls,
            code,
            transient,
            message=message,
            constraint=_constraint(native, message, named_at),
        )
    code = str(native) if native is not None else (state or "?")
    return Classified(ConflictClass.OTHER, code, lost, connection_lost=lost, message=message)


def ambiguous(c: Classified) -> bool:
    """No server number and SQLSTATE HY000: FreeTDS's "Unknown error (0)", which is what a
    statement gets on a session Babelfish ended (KILL, pg_terminate_backend: the FATAL has
    no T-SQL number); the statement after it gets 08S01. Or FreeTDS's own "Unexpected EOF
    from the server (20017)" (SQLSTATE 01000): a statement running when its session was
    ended (20017 is also a server message number: the connection is asked)."""
    return (
        c.cls is ConflictClass.OTHER
        and not c.connection_lost
        and (c.code == "HY000" or c.code == str(_FREETDS_EOF))
    )
