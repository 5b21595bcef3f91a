"""Report: what a run returns, for people (``console``) and for files (``json``)."""
