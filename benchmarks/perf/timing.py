"""Clocks and peak memory.

**Time**: ``time.perf_counter`` around each call, after warm-up calls; a result is the min and
the median over the repeats. Contestants of one case are timed *interleaved* (A, B, A, B, …) in
one process, so a change of load on the shared machine hits both alike.

**Memory**: the peak resident set size (RSS) of the process during one call, above the RSS just
before it. On Linux the kernel's high-water mark ``VmHWM`` (``/proc/self/status``) is reset to the
current RSS by writing ``5`` to ``/proc/self/clear_refs``; before that, free heap memory is given
back to the system (glibc's ``malloc_trim(0)``), so memory freed by an earlier call cannot hide
this call's allocations. RSS sees every allocation (numpy, torch's CPU
allocator, torch_sparse), which ``tracemalloc`` does not. Where the reset is unavailable the
process's ``ru_maxrss`` is used (absolute, never reset), and the method is recorded as such.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MIB = 2**20


def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_bytes() -> int:
    """The current resident set size (0 where ``/proc`` is unavailable)."""
    kib = _status_kib("VmRSS")
    return 0 if kib is None else kib * 1024


def _maxrss_bytes() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024  # bytes on macOS, KiB on Linux


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


def _trim() -> None:
    """Return free heap memory to the system (no ``gc.collect()``: tensors are freed by reference
    counting, and a full collection costs ~0.3 s in a process holding torch and sympy)."""
    name = ctypes.util.find_library("c")
    if name and sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):
            pass


def memory_method() -> str:
    """How :func:`measure_peak` measures, in words (recorded in the results)."""
    if _reset_peak():
        return (
            "peak RSS above the RSS before the call (VmHWM reset through /proc/self/clear_refs, "
            "after malloc_trim), one call, in the case's own process"
        )
    return "ru_maxrss of the process (not resettable here) minus the RSS before the call"


@dataclass
class Peak:
    """One measured call: its wall time, the peak RSS above the baseline, and the baseline."""

    seconds: float
    peak_bytes: int
    baseline_bytes: int
    result: Any = field(repr=False, default=None)


def measure_peak(fn: Callable[[], Any]) -> Peak:
    """Run ``fn`` once; its wall time and the resident memory it needed (module docstring)."""
    _trim()
    resettable = _reset_peak()
    base = rss_bytes()
    before_max = 0 if resettable else _maxrss_bytes()
    t = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t
    if resettable:
        hwm = _status_kib("VmHWM")
        peak = (hwm or 0) * 1024
    else:
        peak = max(_maxrss_bytes(), before_max)
    return Peak(seconds, max(0, peak - base), base, out)


@dataclass
class Timing:
    """Wall times of the timed calls (warm-up excluded)."""

    times: list[float]

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_s": self.min,
            "median_s": self.median,
            "repeats": len(self.times),
            "times_s": [round(t, 6) for t in self.times],
        }


def time_interleaved(
    fns: Mapping[str, Callable[[], Any]],
    *,
    warmup: int = 1,
    repeats: int = 5,
    min_repeats: int = 2,
    budget_s: float | None = None,
    estimate_s: float | None = None,
) -> dict[str, Timing]:
    """Time every function ``repeats`` times, interleaved, after ``warmup`` rounds.

    With ``budget_s``, the number of rounds is cut (never below ``min_repeats``) so that the
    rounds take about ``budget_s`` seconds, judged from the last warm-up round (or from
    ``estimate_s``, the time of one round, when there is no warm-up).
    """
    names = list(fns)
    round_s = estimate_s or 0.0
    for _ in range(warmup):
        t0 = time.perf_counter()
        for name in names:
            fns[name]()
        round_s = time.perf_counter() - t0
    rounds = repeats
    if budget_s is not None and round_s > 0:
        rounds = max(min_repeats, min(repeats, int(budget_s / round_s)))
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            t = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t)
    return {name: Timing(ts) for name, ts in times.items()}


def loglog_fit(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The slope of the least-squares line through ``(log x, log y)`` (points with y > 0)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2 or len({p[0] for p in pts}) < 2:
        return None
    lx, ly = np.array(pts).T
    return float(np.polyfit(lx, ly, 1)[0])


def set_threads(threads: int | None) -> int:
    """Use ``threads`` torch CPU threads (``None``: torch's choice); returns the number used."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def thread_env(threads: int | None) -> dict[str, str]:
    """Environment for a child process whose BLAS/OpenMP pools have ``threads`` threads."""
    env = dict(os.environ)
    if threads:
        for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[key] = str(threads)
    return env


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def available_bytes() -> int | None:
    """``MemAvailable`` from ``/proc/meminfo`` (None where unavailable)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


__all__ = [
    "MIB",
    "Peak",
    "Timing",
    "available_bytes",
    "load_average",
    "loglog_fit",
    "measure_peak",
    "memory_method",
    "rss_bytes",
    "set_threads",
    "thread_env",
    "time_interleaved",
]
