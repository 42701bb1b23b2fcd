"""Python calls into the project (functions whose code lives under ``matlang/``, ``compiler/``
or ``runtime/``) at three moments of a sentence layer's life: construction, ``repr``, and its
first forward on a new PyG batch of 32 small graphs; with wall times, the ``lower`` calls, and
how many of the project's ``nn.Module`` s and stages stay alive after six layers are used,
deleted and collected. Imports and torch are warmed up first; one thread.

Also the walk of each moment as the architecture review counts it: the project files that run
and the file changes (consecutive project calls in different files).

usage: python -m benchmarks.perf.call_counts [--json results/perf/call-counts.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tuple(str(ROOT / d) + os.sep for d in ("matlang", "compiler", "runtime"))
SENTENCES = ["I", "A", "A ⊙ A²", "input h; relu(A h) ⊙ (A² h)"]


#: the files the last :func:`counted` call ran through, in order, consecutive repeats merged
WALK: list[str] = []


def counted(fn: Callable[[], Any]) -> tuple[Any, int, float]:
    """``fn()``, the number of Python calls into the project it made, and its wall time (the
    files it ran through in :data:`WALK`)."""
    calls = 0
    WALK.clear()

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename.startswith(PROJECT):
            calls += 1
            f = frame.f_code.co_filename
            if not WALK or WALK[-1] != f:
                WALK.append(f)

    t = time.perf_counter()
    sys.setprofile(profile)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, calls, time.perf_counter() - t


def walk() -> dict[str, int]:
    """The last :func:`counted` call's files run and file changes."""
    return {"files": len(set(WALK)), "file_changes": len(WALK)}


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn()`` without the profiler (the CPU time is what a loaded
    machine does not inflate)."""
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def pyg_batch(graphs: int, n: int, seed: int) -> Any:
    from torch_geometric.data import Batch, Data

    from benchmarks.perf.workloads import sparse_erdos_renyi

    data = []
    for g in range(graphs):
        e = sparse_erdos_renyi(n, 3.0, seed=seed + g)
        data.append(Data(x=torch.randn(n, 8), edge_index=e, num_nodes=n))
    return Batch.from_data_list(data)


def project_objects() -> int:
    """Live project ``nn.Module`` s and sentence-layer stages."""
    from matlang.compiler.layers.stage import Stage

    count = 0
    for o in gc.get_objects():
        t = type(o)  # type(), not isinstance: some of torch's objects warn when asked
        if issubclass(t, Stage) or (
            issubclass(t, torch.nn.Module) and (t.__module__ or "").startswith("matlang.")
        ):
            count += 1
    return count


def main() -> None:
    from matlang.compiler import api
    from matlang.compiler import lower as lower_module
    from matlang.compiler.layers import sentences as sentences_module
    from matlang.nn import SentenceConv

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)

    # warm-up: imports, torch's first sparse products, sympy's caches of other expressions
    warm = SentenceConv(8, 16, ["A", "input h; A h"])
    repr(warm)
    b0 = pyg_batch(4, 10, seed=1000)
    warm(b0.x, b0.edge_index, b0.batch)
    del warm

    lowered = [0]
    real_lower = lower_module.lower

    def lower(*a: Any, **k: Any) -> Any:
        lowered[0] += 1
        return real_lower(*a, **k)

    patched = (lower_module, sentences_module, api)
    for m in patched:
        m.lower = lower  # type: ignore[attr-defined]
    try:
        row: dict[str, Any] = {"sentences": SENTENCES}
        conv, calls, t = counted(lambda: SentenceConv(8, 16, SENTENCES))
        row["construction"] = {"calls": calls, "ms": t * 1e3, "lower": lowered[0], **walk()}
        _, calls, t = counted(lambda: repr(conv))
        row["repr"] = {"calls": calls, "ms": t * 1e3, "lower": lowered[0], **walk()}

        b = pyg_batch(32, 10, seed=0)
        _, calls, t = counted(lambda: conv(b.x, b.edge_index, b.batch))
        row["first_forward"] = {"calls": calls, "ms": t * 1e3, "lower": lowered[0], **walk()}
        b2 = pyg_batch(32, 10, seed=0)  # the same graphs in new tensors
        _, calls, t = counted(lambda: conv(b2.x, b2.edge_index, b2.batch))
        row["forward_seen_graphs"] = {"calls": calls, "ms": t * 1e3, **walk()}
        _, calls, t = counted(lambda: conv(b2.x, b2.edge_index, b2.batch))
        row["forward_same_batch"] = {"calls": calls, "ms": t * 1e3, **walk()}
    finally:
        for m in patched:
            m.lower = real_lower  # type: ignore[attr-defined]
    # repr of a new layer of the same sentences, unprofiled (its FLOPs computed afresh)
    fresh: Any = SentenceConv(8, 16, SENTENCES)
    wall, cpu = timed(lambda: repr(fresh))
    row["repr_unprofiled"] = {"ms": wall * 1e3, "cpu_ms": cpu * 1e3}
    conv = fresh = None  # the measured layers go too
    gc.collect()
    before = project_objects()
    layers = [SentenceConv(4, 4, ["A", f"A ⊙ A^{k + 2}"]) for k in range(6)]
    for layer in layers:
        layer(b.x[:, :4], b.edge_index, b.batch)
    del layers, layer
    gc.collect()
    row["alive_after_del"] = project_objects() - before
    for k in ("construction", "repr", "first_forward", "forward_seen_graphs"):
        r = row[k]
        print(
            f"{k:>20}: {r['calls']:6d} calls, {r['files']:3d} files, {r['file_changes']:5d} "
            f"file changes, {r['ms']:8.1f} ms, lower {r.get('lower', '-')}"
        )
    r = row["repr_unprofiled"]
    print(f"{'repr unprofiled':>20}: {r['ms']:.1f} ms wall, {r['cpu_ms']:.1f} ms CPU")
    print(f"{'alive_after_del':>20}: {row['alive_after_del']} project modules/stages")
    from benchmarks.records import git_state, versions

    row["provenance"] = {"git": git_state(), "versions": versions(), "threads": 1}
    if args.json:
        out = Path(args.json)
        if out.exists():
            raise SystemExit(f"{out} exists; never replaced: --json NEW.json writes elsewhere")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(row, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
