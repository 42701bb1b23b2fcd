"""The places of a masked product's entries in its mask by scipy's
``csr_sample_offsets`` kernel against the vectorised binary search it replaced, on the whole
call as users make it (a new PyG ``Data``, ``compile(s, cache=False)``), in one process.

usage: python -m benchmarks.perf.positions_ab [--n 1000,10000,100000] [--repeats 15]
                                              [--json out.json]

One thread. ``new``: the kernel; ``old``: the same call with ``_sample_offsets`` patched to
``None`` (the search, as before); ``gb``: hand-written GraphBLAS
(:func:`benchmarks.perf.cold_constants.gb_peer`). Contestants interleaved in shuffled rounds,
ratios on min times. Values are checked equal first.
"""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path
from typing import Any
from unittest import mock

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

SENTENCES = {"(A ⊙ A²)² 𝟏": "l3", "(A ⊙ A²) 𝟏": "rowsum"}


def run(n: int, repeats: int) -> list[dict[str, Any]]:
    from torch_geometric.data import Data

    import matlang
    from benchmarks.perf.cold_constants import _gb, gb_peer, interleaved
    from benchmarks.perf.workloads import sparse_erdos_renyi
    from matlang.runtime import graphblas

    _gb()
    ei = sparse_erdos_renyi(n, 10.0, seed=0)
    rows = []
    for s, kind in SENTENCES.items():
        f = matlang.compile(s, cache=False)

        def new_data() -> Any:
            return Data(edge_index=ei.clone(), num_nodes=n)

        def searched(d: Any, f: Any = f) -> Any:
            with mock.patch.object(graphblas, "_sample_offsets", lambda *a: None):
                return f(d)

        with torch.no_grad():
            a, b = f(new_data()).numpy(), searched(new_data()).numpy()
            ref = np.asarray(gb_peer(kind)(ei, n), dtype=np.float64)
            if not (np.array_equal(a, b) and np.allclose(a, ref)):
                raise AssertionError(f"{s} at n={n}: the two paths or the peer disagree")
            t = interleaved(
                {
                    "new": (new_data, f),
                    "old": (new_data, searched),
                    "gb": functools.partial(gb_peer(kind), ei, n),
                },
                repeats,
            )
        m = {k: min(v) for k, v in t.items()}
        row: dict[str, Any] = {
            "n": n,
            "sentence": s,
            "min_ms": {k: v * 1e3 for k, v in m.items()},
            "new_over_old": m["new"] / m["old"],
            "new_gb": m["new"] / m["gb"],
            "old_gb": m["old"] / m["gb"],
            "load": os.getloadavg()[0],
        }
        rows.append(row)
        print(
            f"n={n:>7} {s:<12} kernel {row['min_ms']['new']:8.2f} ms  search "
            f"{row['min_ms']['old']:8.2f} ms  ({row['new_over_old']:.2f}×)  / gb "
            f"{row['new_gb']:.2f}× (search {row['old_gb']:.2f}×)  (load {row['load']:.1f})",
            flush=True,
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1000,10000,100000")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = [r for n in map(int, args.n.split(",")) for r in run(n, args.repeats)]
    if args.json:
        from benchmarks.records import write_json

        write_json(Path(args.json), {"rows": rows})


if __name__ == "__main__":
    main()
