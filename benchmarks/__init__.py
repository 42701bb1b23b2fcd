"""Measuring matlang: the paper's experiments (:mod:`benchmarks.paper`: Tables 1-4, the TU appendix,
their protocols, training and the report) and the performance benchmarks (:mod:`benchmarks.perf`:
speed, memory and scaling against hand-written code and peers). :mod:`benchmarks.records` keeps
result files (provenance, names, ``--append``).

``python -m benchmarks`` (or ``matlang bench perf``) runs every perf case group and writes
``results/perf/perf.json``, ``results/perf/perf.md`` and ``results/perf/scaling.png``.
"""

from __future__ import annotations
