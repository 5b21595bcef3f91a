"""Apply: run the streams against the subscriber. Apply models are registered by name.

The stream arrives partitioned and laid out (partition i = stream i, in lsn order); a model
only sends: one Spark barrier stage of N tasks, one connection each (``streams``), the calls
planned by ``plan`` in the task (``sender``, ``bulk``), conflicts and fallback as the model
says (``agent``, ``independent``), every outcome recorded (``events``, ``summary``).
``install`` prepares the subscriber before; ``barriers`` applies schema changes, statements
and applied procedures between segments.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from applier.apply.agent import run_agent
from applier.apply.independent import run_independent
from applier.apply.job import StreamJob
from applier.apply.streams import Streamed

# model name -> (spark, laid-out stream, job, events path) -> events and their digest
ApplyModel = Callable[[SparkSession, DataFrame, StreamJob, str], Streamed]

APPLY_MODELS: dict[str, ApplyModel] = {
    "agent": run_agent,
    "independent": run_independent,
}


def apply_model(name: str) -> ApplyModel:
    return APPLY_MODELS[name]


__all__ = ["APPLY_MODELS", "ApplyModel", "StreamJob", "Streamed", "apply_model"]
