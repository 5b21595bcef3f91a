"""applier in your test suite: a 4-stream apply of a generated change stream against the
subscriber, and a check that it converged to the publisher's state.

Copy this file into your project's tests. The fixtures come with applier's pytest plugin
(installed with applier, nothing to configure):

- ``applier_run(config=None, *, custom_sql=(), changes=None, snapshot=None, **settings)``
  runs applier once and returns its ``RunResult``. ``config`` is a configuration file (TOML,
  YAML or JSON; relative paths are looked up beside this file) or None for the demo's two
  tables; ``settings`` are ``[run]`` / ``[workload]`` keys (``streams=4``,
  ``workload="key-chains"``, ``transactions=300``...). Each run gets a database of its own
  on the target, and its folder (report.json, schedule.jsonl...) under the test's tmp_path.
- ``applier_target``: the subscriber, started once per session: the embedded PostgreSQL by
  default, or ``pytest --applier-target "Driver=...;Pwd=..."`` / ``APPLIER_TARGET=...``
  (an ODBC connection string), ``mssql`` or ``postgres-container`` (Docker).

``assert_converged(result)`` fails with the divergent keys and the commands that touched
them (stream, round, outcome, the pair applied out of order).
"""

from applier.testing import assert_converged


def test_key_chains_converge_on_four_streams(applier_run):
    # Key chains (k1 -> k2 -> k3) split over 4 streams by key hash: a chain's second link
    # lands on another stream than the first, finds no row and raises 20598; the round is
    # rolled back and re-applied on one connection, as SQL Server's Distribution Agent does.
    result = applier_run(streams=4, workload="key-chains", transactions=200, key_update_share=0.1)
    assert_converged(result)
    assert result.conflicts["row_not_found"] > 0  # the hazard happened, and was handled
