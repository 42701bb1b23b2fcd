"""One benchmark case: a workload and its contestants, measured side by side.

A case is a JSON-able ``dict`` (so that it can be sent to a fresh process, see
:mod:`benchmarks.perf.worker`)::

    {"id": ..., "group": ..., "workload": Workload fields,
     "contestants": [{"name": ..., "kind": "compiled" | "handwritten" | "dense" | "train", ...}],
     "warmup": 1, "repeats": 5, "min_repeats": 2, "budget_s": 20.0, "threads": 1}

:func:`run_case` builds every contestant, runs an untimed preparation where there is one
(GNNML3's spectral preprocessing, a first training epoch), then measures each contestant's peak
memory over one call (:func:`benchmarks.perf.timing.measure_peak`), then times all of them
interleaved (:func:`benchmarks.perf.timing.time_interleaved`). The preparation's time and peak
memory are recorded too (``prepare_s``, ``prepare_peak_mib``). A contestant with ``"single": true``
is run once only (the dense evaluator at n = 10⁴): its time is that one call. Every contestant's
output is
summarised by ``check = [Σ values, ‖values‖₂]`` in float64, so that the runner can verify that
the contestants computed the same thing.

**Same inputs.** The compiled module and the hand-written implementation are each called on a
fresh :class:`~runtime.batch.Batch` object per call (:func:`fresh_batch`: the same
tensors, nothing remembered), so a compiled module cannot profit from what a batch remembers
between calls (its validation, the sortedness of its edges; see :meth:`Batch.cached`), which
the hand-written code has no equivalent of. ``validate=True`` therefore costs a full validation
on every timed call. Neither side is given anything prepared beyond the batch's tensors.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from benchmarks.perf.timing import (
    MIB,
    load_average,
    measure_peak,
    memory_method,
    set_threads,
    time_interleaved,
)
from benchmarks.perf.workloads import Workload
from matlang.graphs import Graph
from matlang.runtime.batch import Batch

KINDS = ("compiled", "handwritten", "dense", "train")


@dataclass
class Prepared:
    """A contestant ready to run: the call to measure, an optional untimed preparation."""

    fn: Callable[[], Any]
    prepare: Callable[[], Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)


def summarize(out: Any) -> list[float]:
    """``[Σ x, ‖x‖₂]`` of an output (a tensor, or the dense evaluator's list of values)."""
    if isinstance(out, torch.Tensor):
        x = out.detach().to(torch.float64).reshape(-1).numpy()
    else:
        from matlang.evaluator import to_float

        parts = [np.asarray(to_float(v), dtype=np.float64).reshape(-1) for v in out]
        x = np.concatenate(parts) if parts else np.zeros(0)
    return [float(x.sum()), float(np.sqrt((x * x).sum()))]


def agree(a: list[float], b: list[float], rtol: float = 1e-3, atol: float = 1e-6) -> bool:
    """Two :func:`summarize` results equal up to ``rtol`` (float32 sums) and ``atol``."""
    return all(
        math.isfinite(x) and math.isfinite(y) and abs(x - y) <= rtol * max(abs(x), abs(y)) + atol
        for x, y in zip(a, b)
    )


# --------------------------------------------------------------------------- contestants


def fresh_batch(batch: Batch) -> Batch:
    """``batch`` as a new batch: the same tensors, nothing remembered. Batches over the same
    tensors share one memo (validation, graph constants, operators), so a copy of the object
    alone would remember everything: the shared memo is emptied too."""
    b = dataclasses.replace(batch)
    b._memo.clear()
    return b



def _dtype(name: str) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[name]


def _compiled(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    import matlang
    from matlang.runtime import sparse

    model = matlang.compile(
        c["sentence"],
        backend=c.get("backend"),
        dtype=c.get("dtype", "float32"),
        validate=c.get("validate", False),
        dense=c.get("dense", False),
        cache=False,  # constants computed on every call: a new graph each time
    )
    backend = sparse.resolve_backend(c.get("backend"))

    def call() -> torch.Tensor:
        with torch.no_grad():
            return model(fresh_batch(batch))  # a fresh Batch: module docstring

    return Prepared(call, info={"backend": backend, "layers": model.plan.layers()})


def _handwritten(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    from benchmarks.perf.handwritten import HANDWRITTEN

    fn = HANDWRITTEN[c["sentence"]]

    def call() -> torch.Tensor:
        with torch.no_grad():
            return fn(fresh_batch(batch))

    return Prepared(call, info={"implementation": f"benchmarks.perf.handwritten.{fn.__name__}"})


def _dense(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    import matlang
    from matlang.evaluator import evaluate

    if graphs is None:
        raise ValueError("the dense evaluator needs the 'generators' sampler (dense graphs)")
    expr = matlang.parse(c["sentence"])
    exact = bool(c.get("exact", False))
    return Prepared(
        lambda: evaluate(expr, graphs, exact=exact),
        info={"mode": "exact (int/Fraction)" if exact else "float64 numpy"},
    )


def _train(c: dict[str, Any], batch: Batch, graphs: list[Graph] | None) -> Prepared:
    """One training epoch of a reference model (Adam, MSE to random targets)."""
    from matlang.runtime.models import build_model

    if graphs is None:
        raise ValueError("training needs the 'generators' sampler")
    torch.manual_seed(c.get("seed", 0))
    model = build_model(c["model"], 1, 1, config=c.get("config", "count"))
    size = int(c.get("batch_size", 1))
    batches = [Batch.from_graphs(graphs[k : k + size]) for k in range(0, len(graphs), size)]
    targets = [torch.randn(b.num_graphs, 1) for b in batches]
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def epoch() -> torch.Tensor:
        model.train()
        total = torch.zeros(())
        for b, y in zip(batches, targets):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(b), y)
            loss.backward()
            opt.step()
            total = total + loss.detach()
        return total

    info = {
        "parameters": model.num_parameters(),
        "config": c.get("config", "count"),
        "graphs_per_epoch": len(graphs),
        "batch_size": size,
    }
    return Prepared(epoch, prepare=epoch, info=info)


BUILDERS: dict[str, Callable[[dict[str, Any], Batch, list[Graph] | None], Prepared]] = {
    "compiled": _compiled,
    "handwritten": _handwritten,
    "dense": _dense,
    "train": _train,
}

#: The modules a contestant kind needs beyond the project's core (peers register theirs, with
#: their builders, when :mod:`benchmarks.perf.peers` is imported).
NEEDS: dict[str, tuple[str, ...]] = {}


def missing_extra(contestant: dict[str, Any]) -> str | None:
    """Why a contestant cannot run on this install, or None: the hand-written implementations
    and the torch_sparse backend need the ``sparse`` extra (torch-sparse, torch-scatter), which
    the default install leaves out."""
    import importlib.util

    from matlang.runtime import sparse

    needs = contestant.get("kind") == "handwritten" or contestant.get("backend") == "torch_sparse"
    if needs and "torch_sparse" not in sparse.available_backends():
        return "needs torch-sparse and torch-scatter (not installed: bash .ci/setup --sparse)"
    wanted = NEEDS.get(contestant.get("kind", ""), ())
    absent = [m for m in wanted if not importlib.util.find_spec(m)]
    if absent:
        return f"needs {', '.join(absent)} (not installed)"
    return None


def _out_of_memory(err: BaseException) -> bool:
    text = str(err)
    marks = ("can't allocate memory", "DefaultCPUAllocator", "bad_alloc", "Cannot allocate")
    return isinstance(err, MemoryError) or any(m in text for m in marks)


# --------------------------------------------------------------------------- one case


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """Measure one case (module docstring); returns a JSON-able result."""
    threads = set_threads(spec.get("threads"))
    workload = Workload.from_dict(spec["workload"])
    t0 = time.perf_counter()
    batch, graphs = workload.build()
    result: dict[str, Any] = {
        "id": spec["id"],
        "group": spec["group"],
        "workload": {
            **workload.to_dict(),
            "label": workload.label(),
            "nodes": batch.num_nodes,
            "edges": batch.num_edges,
            "build_s": round(time.perf_counter() - t0, 3),
        },
        "params": spec.get("params", {}),
        "threads": threads,
        "load_average": load_average(),
        "memory_method": memory_method(),
        "contestants": {},
    }
    ready: dict[str, Prepared] = {}
    single: set[str] = set()
    max_call_s = spec.get("max_call_s")
    for c in spec["contestants"]:
        name = c["name"]
        entry: dict[str, Any] = {k: v for k, v in c.items() if k != "name"}
        result["contestants"][name] = entry
        reason = missing_extra(c)
        if reason is not None:  # not an error: the report says why the cell is empty
            entry["skipped"] = reason
            continue
        try:
            prepared = BUILDERS[c["kind"]](c, batch, graphs)
            entry.update(prepared.info)
            if prepared.prepare is not None:
                first = measure_peak(prepared.prepare)
                entry["prepare_s"] = round(first.seconds, 4)
                entry["prepare_peak_mib"] = round(first.peak_bytes / MIB, 2)
            peak = measure_peak(prepared.fn)
        except Exception as err:  # recorded, and the other contestants still run
            entry["error"] = ("out of memory: " if _out_of_memory(err) else "") + (
                f"{type(err).__name__}: {str(err)[:300]}"
            )
            continue
        entry["first_call_s"] = peak.seconds
        entry["peak_mib"] = round(peak.peak_bytes / MIB, 2)
        entry["baseline_mib"] = round(peak.baseline_bytes / MIB, 2)
        entry["check"] = summarize(peak.result)
        if c.get("single") or (max_call_s is not None and peak.seconds > max_call_s):
            single.add(name)
            entry.update({"min_s": peak.seconds, "median_s": peak.seconds, "repeats": 1})
            entry["times_s"] = [round(peak.seconds, 6)]
            entry["single_call"] = True
        else:
            ready[name] = prepared
    timings = time_interleaved(
        {name: p.fn for name, p in ready.items()},
        warmup=max(0, int(spec.get("warmup", 1)) - 1),  # the memory pass was the first call
        repeats=int(spec.get("repeats", 5)),
        min_repeats=int(spec.get("min_repeats", 2)),
        budget_s=spec.get("budget_s"),
        estimate_s=sum(result["contestants"][name]["first_call_s"] for name in ready),
    )
    for name, timing in timings.items():
        result["contestants"][name].update(timing.to_dict())
    result["wall_s"] = round(time.perf_counter() - t0, 3)
    return result


__all__ = [
    "BUILDERS",
    "KINDS",
    "NEEDS",
    "Prepared",
    "agree",
    "fresh_batch",
    "run_case",
    "summarize",
]
