"""Streams and settings of the seeded bugs that applier explore / shrink / export must find
(tests/integration/test_repro_*.py); the SQL and configuration files are in tests/data/repro/."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from applier.config import Config, load_config

DATA = Path(__file__).resolve().parents[1] / "data" / "repro"


def config(name: str, **run: Any) -> Config:
    """tests/data/repro/<name>.toml with these [run] settings changed."""
    cfg = load_config(DATA / f"{name}.toml")
    return cfg.replace(run=dataclasses.replace(cfg.run, **run)) if run else cfg


def orders_stream(folder: Path, orders: int) -> Path:
    """The stream of seeded bug 2: order i inserted by transaction 2i - 1, its line (order_id
    i) by transaction 2i. In commit order an order is always there before its line."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "orders.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(1, orders + 1):
            for xact, rec in (
                (2 * i - 1, {"article": "dbo.orders", "after": {"id": i, "customer": f"c{i % 37}"}}),
                (
                    2 * i,
                    {
                        "article": "dbo.order_lines",
                        "after": {"id": 10_000 + i, "order_id": i, "qty": i % 7 + 1},
                    },
                ),
            ):
                line = {
                    "lsn": xact << 20 | 1,
                    "xact_seqno": xact,
                    "command_id": 1,
                    "op": "I",
                    "before": None,
                    **rec,
                }
                f.write(json.dumps(line) + "\n")
    return path


def run_pytest(test_file: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """An exported reproducer's test, run the way its user would: pytest in its own folder,
    a process of its own (its own Spark and embedded PostgreSQL), nothing of this repository's
    test suite (no conftest, no rootdir configuration)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYSPARK_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file.name],
        cwd=test_file.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
