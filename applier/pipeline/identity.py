"""A run's identity: what a ``--resume`` must find the same in the subscriber it continues.

The progress rows say which rounds each stream committed; they mean something only for the
same stream cut the same way. So every run records, beside them (``applier.runs``), its
settings and their digest: the source (the generator's settings and seed, or the digests of
the change and snapshot files), the subscription's articles (and its filters and column
lists), the partition strategy, N, the commit batch size, the model, the error policy and
set-based apply. A resume with any of them different is refused, naming it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from applier.articles import Article
from applier.config import Config, Subscription, article_to_dict
from applier.config.model import subscription_to_dict
from applier.sources.files import InputFiles, Inputs, file_digest


def _digest(path: str | Path, scanned: InputFiles | None) -> str:
    """The digest the driver's scan computed as it checked the files, or (none) the files read."""
    if scanned is not None and scanned.digest is not None:
        return scanned.digest
    return file_digest(path)


@dataclass(frozen=True)
class RunIdentity:
    """The settings a resume must find the same, and their digest."""

    settings: dict[str, Any]

    @property
    def fingerprint(self) -> str:
        text = json.dumps(self.settings, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def differences(self, recorded: Mapping[str, Any]) -> list[str]:
        """What differs from the run the subscriber holds, one phrase per setting."""
        out = []
        for key in sorted(set(self.settings) | set(recorded)):
            now, then = self.settings.get(key), recorded.get(key)
            if _canonical(now) != _canonical(then):
                if isinstance(now, (dict, list)) or isinstance(then, (dict, list)):
                    out.append(f"{key} differ")
                else:
                    out.append(f"{key} is {now} now, {then} in the subscriber")
        return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def run_identity(
    config: Config,
    sub: Subscription,
    articles: tuple[Article, ...],
    changes: str | Path | None,
    snapshot: str | Path | None,
    streams: int,
    capture: Any = None,
    inputs: Inputs | None = None,
) -> RunIdentity:
    """``inputs``: the driver's scan of ``changes`` and ``snapshot``, whose digests it holds."""
    rs = config.run
    scanned = inputs or Inputs()
    if changes is None and (capture is None or capture.source is None):
        source: dict[str, Any] = {"generated": asdict(config.workload)}
    else:
        source = {
            "changes": _digest(changes, scanned.changes) if changes is not None else None,
            "snapshot": _digest(snapshot, scanned.snapshot) if snapshot is not None else None,
        }
        if capture is not None and capture.format != "canonical":
            # how the capture is read changes the stream: its format and options (the ODBC
            # source only by its capture instance: the connection string may hold secrets)
            source["capture"] = {
                "format": capture.format,
                "fold_key_changes": capture.fold_key_changes,
                "capture_instance": capture.capture_instance,
            }
    return RunIdentity(
        {
            "source": source,
            "articles": [article_to_dict(a) for a in articles],
            # its row filters and column lists (where the subscriber is and its N are elsewhere)
            "subscription": {
                k: v for k, v in subscription_to_dict(sub).items() if k in ("articles", "sqldml_threshold")
            },
            "partition": rs.partition,
            "streams": streams,
            "commit_batch_size": rs.commit_batch_size,
            "model": rs.model,
            "error_policy": str(rs.error_policy),
            "set_apply": rs.set_apply,
            "schedule": rs.schedule,
        }
    )
