"""Where an error of a later statement of a batch surfaces, per dialect (``ERRORS_IN_LATER_RESULTS``).

The sender sends a round's calls as one batch of statements and walks the batch's results
(``nextset``) only where the dialect says a later statement's error waits there (SQL Server).
PostgreSQL's flag says psqlODBC raises it at the execute itself: this checks that on the real
driver, with the error in the 2,000th of 2,500 CALLs, and that nothing of the batch stays.
"""

from __future__ import annotations

import pyodbc
import pytest

from applier.dialects import DIALECTS

pytestmark = pytest.mark.integration


def test_psqlodbc_raises_a_later_statements_error_at_execute(target) -> None:  # type: ignore[no-untyped-def]
    assert DIALECTS["postgres"].ERRORS_IN_LATER_RESULTS is False
    assert DIALECTS["tsql"].ERRORS_IN_LATER_RESULTS is True
    conn = target.connect(2000)
    try:
        cur = conn.cursor()
        cur.execute(
            "DROP TABLE IF EXISTS batch_errors; CREATE TABLE batch_errors (id int PRIMARY KEY, v int)"
        )
        cur.execute("INSERT INTO batch_errors SELECT g, 0 FROM generate_series(1, 2500) g")
        cur.execute(
            "CREATE OR REPLACE PROCEDURE batch_errors_upd(a int, b int) LANGUAGE plpgsql AS $$ BEGIN "
            "UPDATE batch_errors SET v = b WHERE id = a; "
            "IF NOT FOUND THEN RAISE EXCEPTION 'no row %', a USING ERRCODE = 'P0001'; END IF; END $$"
        )
        conn.commit()
        sql = ";\n".join(["CALL batch_errors_upd(?, ?)"] * 2500)
        params: list[int] = []
        for i in range(1, 2501):
            params += [i if i != 2000 else 99_999, 7]
        with pytest.raises(pyodbc.Error, match="no row 99999"):
            conn.cursor().execute(sql, params)  # no nextset: the execute itself raises
        conn.rollback()
        assert conn.cursor().execute("SELECT count(*) FROM batch_errors WHERE v = 7").fetchone()[0] == 0
        # the same batch without the bad key applies every statement at the execute
        good = [x for i in range(1, 2501) for x in (i, 7)]
        conn.cursor().execute(sql, good)
        conn.commit()
        assert conn.cursor().execute("SELECT count(*) FROM batch_errors WHERE v = 7").fetchone()[0] == 2500
    finally:
        conn.rollback()
        conn.cursor().execute("DROP TABLE IF EXISTS batch_errors; DROP PROCEDURE IF EXISTS batch_errors_upd")
        conn.commit()
        conn.close()
