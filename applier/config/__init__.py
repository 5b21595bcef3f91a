"""Configuration of a run: the domain model, its file format, and the checks, done once.

``from applier.config import X`` replaces ``from applier.settings import X``. The modules:
``model`` (frozen dataclasses, no checks), ``policy`` (the error policy), ``demo`` (the demo's
articles), ``fileformat`` (the file format: pydantic models, JSON Schema, errors in words) and
``files`` (parsing and every check, for files, command-line overrides and code).
"""

from __future__ import annotations

from applier.config.demo import demo_articles, demo_config
from applier.config.fileformat import json_schema
from applier.config.files import (
    check_config,
    load_config,
    parse_article_dicts,
    parse_config,
    validate_workload,
    with_overrides,
)
from applier.config.model import (
    HAZARD_WORKLOADS,
    MODELS,
    PARTITIONS,
    VERIFY_MODES,
    WORKLOADS,
    ArticleSubscription,
    Config,
    LoadSettings,
    RunSettings,
    Subscription,
    Workload,
    article_to_dict,
)
from applier.config.policy import ErrorPolicy

__all__ = [
    "HAZARD_WORKLOADS",
    "MODELS",
    "PARTITIONS",
    "VERIFY_MODES",
    "WORKLOADS",
    "ArticleSubscription",
    "Config",
    "ErrorPolicy",
    "LoadSettings",
    "RunSettings",
    "Subscription",
    "Workload",
    "article_to_dict",
    "check_config",
    "demo_articles",
    "demo_config",
    "json_schema",
    "load_config",
    "parse_article_dicts",
    "parse_config",
    "validate_workload",
    "with_overrides",
]
