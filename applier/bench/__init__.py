"""Benchmark: applier's apply against the target's ceiling and PostgreSQL's own apply worker.

``applier bench`` measures, in one run and on one change stream, the same calls sent by a
minimal pyodbc loop (the ceiling), applier end to end and its apply phase, and PostgreSQL's
native logical replication catching up on the same changes; see :mod:`applier.bench.command`.
"""
