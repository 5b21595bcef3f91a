"""A PNG of commands/s against N: ceiling, applier's apply phase, end to end, native apply."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def plot(doc: Mapping[str, Any], path: str | Path) -> Path | None:
    """Write the plot; None when matplotlib is missing (pip install 'applier[bench]')."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    runs = doc["runs"]
    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4.5), squeeze=False, sharey=True)
    series = (
        ("ceiling", "ceiling (minimal pyodbc loop)", "o-"),
        ("applier_apply", "applier apply phase", "s-"),
        ("applier_end_to_end", "applier end to end", "^--"),
        ("applier_set_apply", "applier apply phase, set-based", "D-"),
        ("applier_set_end_to_end", "applier end to end, set-based", "v--"),
    )
    for ax, (sync, run) in zip(axes[0], runs.items(), strict=True):
        ns = [int(n) for n in run["per_n"]]
        for key, label, style in series:
            ys = [(run["per_n"][str(n)].get(key) or {}).get("commands_per_s") for n in ns]
            pts = [(n, y) for n, y in zip(ns, ys, strict=True) if y is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
        native = (run["native_logical"] or {}).get("commands_per_s")
        if native:
            ax.axhline(native, color="gray", linestyle=":", label="PostgreSQL logical apply (1 worker)")
        ax.set_title(f"synchronous_commit = {sync}")
        ax.set_xlabel("streams N")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns or [1])
        ax.set_xticklabels([str(n) for n in ns] or ["1"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("commands/s")
    b = doc["bench"]
    fig.suptitle(f"{b['commands']} updates, {b['transaction_size']} per transaction, {b['rows']} rows")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
