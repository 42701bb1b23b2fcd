"""``scaling.png``: time and peak memory of the scaling runs against E, log–log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.perf.handwritten import SHORT


def plot_scaling(data: dict[str, Any], path: str | Path) -> Path:
    """Two log–log panels (time, peak memory): compiled (solid) and hand-written (dashed), with
    the fitted exponents and a slope-1 guide."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fits = data["scaling"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    panels = (
        ("min_s", "time_exponent", "time per call (s)"),
        ("peak_mib", "memory_exponent", "peak RSS above baseline (MiB)"),
    )
    for ax, (key, exp_key, ylabel) in zip(axes, panels):
        for sentence, f in fits.items():
            e, y = np.asarray(f["edges"], float), np.asarray(f[key], float)
            keep = y > 0
            exponent = f[exp_key]
            label = SHORT.get(sentence, sentence) + (
                f"  (slope {exponent:.2f})" if exponent is not None else ""
            )
            line = ax.loglog(e[keep], y[keep], "o-", label=label)[0]
            hw = f.get("handwritten")
            if hw:
                eh, yh = np.asarray(hw["edges"], float), np.asarray(hw[key], float)
                ok = yh > 0
                slope = hw[exp_key]
                ax.loglog(
                    eh[ok],
                    yh[ok],
                    "s--",
                    color=line.get_color(),
                    alpha=0.6,
                    label=f"hand-written (slope {slope:.2f})" if slope is not None else None,
                )
        lo = min(min(f["edges"]) for f in fits.values())
        hi = max(max(f["edges"]) for f in fits.values())
        ref = [max(f[key]) * lo / max(f["edges"]) for f in fits.values() if max(f[key]) > 0] or [
            1.0
        ]
        ax.loglog([lo, hi], [max(ref), max(ref) * hi / lo], "k:", lw=1, label="slope 1")
        ax.set_xlabel("E (directed edge entries), Erdős–Rényi, avg degree 10")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("matlang compiled modules: scaling with the number of edges")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


__all__ = ["plot_scaling"]
