"""Apply: run the streams against the subscriber. Apply models are registered by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from applier.apply.agent import AgentJob, run_agent

# model name -> (spark, planned rows with stream and round, job, events path) -> events
ApplyModel = Callable[[SparkSession, DataFrame, AgentJob, str], DataFrame]


def _independent(spark: SparkSession, planned: DataFrame, job: AgentJob, out: str) -> DataFrame:
    from applier.apply.independent import run_independent

    return run_independent(spark, planned, job, out)


APPLY_MODELS: dict[str, ApplyModel] = {
    "agent": run_agent,
    "independent": _independent,
}


def apply_model(name: str) -> ApplyModel:
    return APPLY_MODELS[name]


__all__: list[Any] = ["APPLY_MODELS", "AgentJob", "apply_model"]
