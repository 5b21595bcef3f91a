"""Lint: checks of a subscriber's custom apply procedures before a run (``applier lint``)."""
