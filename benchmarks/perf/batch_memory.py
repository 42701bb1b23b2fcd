"""Resident memory over a stream of new batches: what a layer keeps of the batches it has seen.

A model serving new graphs (inference, or a first epoch) must not keep a batch's constants
once the batch is gone. This feeds ``SentenceConv(16, 16, ["I", "A", "A ⊙ A²"])`` (and PyG's
``GINConv`` as the reference) a new PyG ``Batch`` of 128 graphs of 25 nodes (ER, mean degree 10)
per call, forward and backward, and records the process's resident set size (``/proc``)
every ``--every`` batches, after ``gc.collect()``: with the layer's per-graph cache (which files
each new graph's supports, up to its bound) and without it (``stage.cache = None``: nothing
should grow). The graphs are drawn before the first reading, so their memory is in the baseline.

    python -m benchmarks.perf.batch_memory [--batches 120] [--every 40] [--json out.json]

(Run as a file, ``python benchmarks/perf/batch_memory.py``, it measures whichever ``matlang``
that Python imports: an older checkout's, for a before/after.)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _graphs(batches: int, seed0: int) -> list[list[Any]]:
    from torch_geometric.data import Data

    from benchmarks.perf.workloads import sparse_erdos_renyi

    out, seed = [], seed0
    for _ in range(batches):
        row = []
        for _ in range(128):
            seed += 1
            ei = sparse_erdos_renyi(25, 10.0, seed=seed)
            row.append(Data(x=torch.randn(25, 16), edge_index=ei, num_nodes=25))
        out.append(row)
    return out


def run(contestant: str, batches: int, every: int) -> dict[str, Any]:
    """RSS (MB) after every ``every`` new batches through one contestant."""
    from torch import nn
    from torch_geometric.data import Batch
    from torch_geometric.nn import GINConv

    import matlang
    from matlang.nn import SentenceConv

    torch.manual_seed(0)
    if contestant == "gin":
        layer: Any = GINConv(nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16)))
    else:
        layer = SentenceConv(16, 16, ["I", "A", "A ⊙ A²"])
        if contestant == "sentence_conv_no_cache":
            layer._support_stage.cache = None
    pool = _graphs(batches, 10_000)
    gc.collect()
    readings = [{"batches": 0, "rss_mb": round(_rss_mb(), 1)}]
    for k, graphs in enumerate(pool, 1):
        b = Batch.from_data_list(graphs)
        x = b.x.requires_grad_(True)
        out = layer(x, b.edge_index) if contestant == "gin" else layer(x, b.edge_index, b.batch)
        out.sum().backward()
        del b, x, out
        if k % every == 0:
            gc.collect()
            readings.append({"batches": k, "rss_mb": round(_rss_mb(), 1)})
    grow = (readings[-1]["rss_mb"] - readings[1]["rss_mb"]) / max(batches - every, 1)
    return {
        "contestant": contestant,
        "matlang": str(Path(matlang.__file__).resolve().parent.parent),
        "readings": readings,
        "mb_per_batch_after_the_first_reading": round(grow, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=120)
    ap.add_argument("--every", type=int, default=40)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only", help=argparse.SUPPRESS)  # one contestant, in this process
    args = ap.parse_args()
    if args.only:
        print(json.dumps(run(args.only, args.batches, args.every)))
        return
    rows = []
    for c in ("gin", "sentence_conv_no_cache", "sentence_conv"):
        cmd = [sys.executable, __file__, "--only", c, "--batches", str(args.batches)]
        cmd += ["--every", str(args.every)]
        res = subprocess.run(cmd, check=True, capture_output=True, text=True)
        row = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(row)
        rss = " → ".join(f"{r['rss_mb']:.0f}" for r in row["readings"])
        print(f"{c:24s} RSS MB {rss}   ({row['mb_per_batch_after_the_first_reading']} MB a batch)")
    if args.json:
        commit = subprocess.run(
            ["git", "-C", rows[0]["matlang"], "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", rows[0]["matlang"], "status", "--short", "--untracked-files=no"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        doc = {
            "what": __doc__.split("\n\n")[0],
            "commit": commit,
            "dirty": bool(dirty),
            "torch": torch.__version__,
            "threads": 1,
            "rows": rows,
        }
        args.json.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
