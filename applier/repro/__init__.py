"""Reproducing ordering bugs: explore schedules, shrink a failure, export it, replay it.

- :mod:`~applier.repro.explore`: K seeded controlled schedules of one stream, stop at the first
  that fails (``applier explore``).
- :mod:`~applier.repro.shrink`: delta debugging (:mod:`~applier.repro.ddmin`) of a failing run
  folder under its recorded schedule (``applier shrink``).
- :mod:`~applier.repro.export`: a self-contained reproducer: SQL, files, a pytest test
  (``applier export``); :mod:`~applier.repro.sqlscript` renders the sessions' statements.
- :mod:`~applier.repro.replay`: the same stream and schedule again, the outcome compared
  (``applier replay``).

Everything runs through the public API (:func:`applier.api.run`) with the run folders it writes.
"""
