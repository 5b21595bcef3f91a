"""The run loop (``run``): subscriptions x segments over one change stream.

``segments`` cuts one subscription's stream at its barrier events and applies each segment;
``run`` sequences the stages for every subscription. The public entry is :func:`applier.run`
(``applier.api``), which starts the target and Spark and calls :func:`run`.
"""

from __future__ import annotations

from applier.pipeline.run import run, subscriptions

__all__ = ["run", "subscriptions"]
