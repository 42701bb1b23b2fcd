"""Where the time goes: ``python -m benchmarks.perf.profiling [--sentence S] [--batch]``.

Profiles the compiled module and the hand-written implementation of one benchmarked sentence
with ``cProfile`` (Python functions, cumulative time, so a kernel shows under the function of
the project that called it) and prints the top entries of each, per call. This is how the causes
named in ``perf.md``'s notes were found.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.perf.handwritten import HANDWRITTEN
from benchmarks.perf.workloads import Workload

WORKLOADS = {
    "large": Workload(10_000, 10.0),
    "batch": Workload(25, 4.0, graphs=64, sampler="generators"),
}


def profile_calls(fn: Callable[[], Any], calls: int, top: int = 25) -> str:
    """cProfile of ``calls`` calls of ``fn`` (after one warm-up), by cumulative time."""
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    per_call = stats.total_tt / calls  # type: ignore[attr-defined]
    return f"{per_call * 1e3:.2f} ms per call (under the profiler)\n{out.getvalue()}"


def main(argv: Sequence[str] | None = None) -> int:
    import torch

    import matlang

    p = argparse.ArgumentParser(prog="python -m benchmarks.perf.profiling", description=__doc__)
    p.add_argument("--sentence", default="(A ⊙ A²)² 𝟏", choices=list(HANDWRITTEN))
    p.add_argument("--workload", default="large", choices=list(WORKLOADS))
    p.add_argument("--backend", help="compiled module's backend (default: the best available)")
    p.add_argument("--calls", type=int, help="profiled calls (default: 5 large, 100 batch)")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    batch, _ = WORKLOADS[args.workload].build()
    calls = args.calls or (5 if args.workload == "large" else 100)
    model = matlang.compile(args.sentence, backend=args.backend, validate=False)
    hand = HANDWRITTEN[args.sentence]
    with torch.no_grad():
        for name, fn in (("compiled", lambda: model(batch)), ("hand-written", lambda: hand(batch))):
            print(f"===== {name}: {args.sentence} on {WORKLOADS[args.workload].label()}")
            print(profile_calls(fn, calls, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
