"""Benchmarks of compiled modules: speed, memory and scaling (issue 7).

``python -m benchmarks`` (or ``matlang bench perf``) runs every case group and writes
``benchmarks/results.json``, ``benchmarks/results.md`` and ``benchmarks/scaling.png``.

Modules: :mod:`benchmarks.workloads` (the graphs), :mod:`benchmarks.handwritten` (hand-written
torch-sparse implementations of the benchmarked sentences), :mod:`benchmarks.timing` (clocks and
peak memory), :mod:`benchmarks.cases` (one case: contestants timed side by side),
:mod:`benchmarks.worker` (a case in a fresh process), :mod:`benchmarks.runner` (the groups, the
summary and the result files), :mod:`benchmarks.report` (Markdown), :mod:`benchmarks.plot`, and
:mod:`benchmarks.profiling` (``python -m benchmarks.profiling``: where a compiled module's time
goes, beside the hand-written implementation).
"""

from __future__ import annotations
