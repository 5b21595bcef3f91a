"""``applier capture``: record a live PostgreSQL publisher's change traffic for a run.

The first stage of the data flow, before ``sources``: a wal2json logical replication slot read
through SQL functions over ODBC (no replication-protocol client), written as the files
``applier run --format wal2json|wal2json2`` reads, and optionally the initial snapshot of the
published tables at the slot's consistent point, as ``applier run --snapshot`` reads it.

- ``slot``: the publisher: its checks (wal_level, the slot and its plugin), the wal2json
  options, creating a slot with its exported snapshot, peeking and confirming changes;
- ``snapshot``: the published tables' rows read in that snapshot, as canonical images;
- ``command``: the ``applier capture`` command: the loop, its stops, resuming a file.
"""
