"""EXPECTED TO FAIL: this test shows what applier reports when a subscriber loses changes.

``broken_update.sql`` installs the custom update procedure ``dbo.kc_upd`` of the table
``dbo.kc_rows`` (``broken_procedure.toml``: ``update = "SCALL dbo.kc_upd"``) WITHOUT the
zero-row check that the procedures SQL Server generates have (``IF @@ROWCOUNT = 0`` ->
error 20598; in PL/pgSQL ``IF NOT FOUND``). Under 4 streams a key chain's second link
(k2 -> k3) can run before the first (k1 -> k2) is committed: it updates nothing, says
nothing, and the row stays at k2 for good. No conflict is raised, so no round is reset: the
subscriber silently diverges from the publisher.

``assert_converged`` fails and its message names the lost keys ("missing dbo.kc_rows key
(...)") with the commands that touched them and the inverted pair ("lsn X ran on stream 2
before lsn Y committed on stream 1"). The fix is one line in the procedure::

    IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'RP598', MESSAGE = 'row not found'; END IF;

Keep this file out of your suite once you have seen it fail (or mark the test
``@pytest.mark.xfail(strict=True)`` to keep it as a guard that applier still catches it).
"""

from applier.testing import assert_converged


def test_update_procedure_without_zero_row_check_loses_keys(applier_run):
    result = applier_run("broken_procedure.toml", custom_sql=["broken_update.sql"])
    assert_converged(result)  # fails: the divergent keys are in the message
