"""Helpers shared by test modules (STYLE.md: test modules do not import each other; they import
from here, and tests/unit/test_test_imports.py keeps it so).

- runs: ``config`` (one article ``dbo.<table>``), ``run`` and ``run_subscriptions`` through
  ``applier.run``, ``streams_of`` (the stream each record goes to);
- changes: ``write_jsonl`` (a change file), ``key_update`` (a key-changing update record);
- subscriber: ``rows``, ``table_exists``, ``table_ref`` (queries on a subscriber through ODBC);
- badinput: bad input driven through ``applier.cli.main``, refused with exit code 2;
- faults: the (operation, key) multiset an audit trigger holds after exactly-once apply
  (``expected_changes``), and the snapshot-resume tests' helpers; killing: kill -9 at a fail point;
- connection_killer: a thread terminating a PostgreSQL subscriber's connections mid-run;
- call_syntaxes: every update/delete syntax pair and the demo workload's changes under each;
- tsql_articles, tsql_reader: the T-SQL procedure tests' articles, and the reader that parses
  generated procedures statement by statement;
- adventureworks, wal2json_examples, mssql_cdc, repserver_schema, repserver_sqldml,
  repro_streams, debezium_capture: data of tests/data/ (or generated) as inputs and expected rows;
- publisher, pgvalues, harness: the real PostgreSQL publisher, its types and the publisher matrix.
"""
