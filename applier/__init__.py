"""applier: a distributed multi-connection apply tester for database replication subscribers.

The public API (``applier.api``)::

    import applier

    result = applier.run(applier.load_config("articles.toml"), target=applier.Target.embedded())
    print(result.verdict)

The names are loaded on first use: Spark's Python workers import ``applier.<stage>`` modules
and should not pay for the API's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from applier.api import (
        Config,
        Converted,
        Endpoint,
        Options,
        RunResult,
        Target,
        Verdict,
        convert,
        generate,
        load_config,
        procedure_scripts,
        run,
    )

# applier.api.__all__, name for name (tests/unit/test_api.py holds them equal)
__all__ = [
    "Config",
    "Converted",
    "Endpoint",
    "Options",
    "RunResult",
    "Target",
    "Verdict",
    "convert",
    "generate",
    "load_config",
    "procedure_scripts",
    "run",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from applier import api

        return getattr(api, name)
    raise AttributeError(f"module 'applier' has no attribute {name!r}")
