"""Load tests: paced runs on the command line, live metrics, thresholds, run-to-run comparison
and the capacity search (``applier compare``, ``applier capacity``)."""
