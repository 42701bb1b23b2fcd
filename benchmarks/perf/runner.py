"""The benchmark groups, the summary, and the result files.

Groups (each a list of cases, see :mod:`benchmarks.perf.cases`):

``handwritten``  compiled vs a hand-written torch-sparse implementation (ratio of min times)
``dense``        compiled sparse vs the dense evaluator (float64; exact at small n)
``scaling``      compiled (A ⊙ A²)² 𝟏 and tr(A³) on Erdős–Rényi graphs of growing E: fitted
                 log–log exponents of time and of peak memory
``backends``     the same plans on torch_sparse and on pure torch
``models``       GNNML3 vs PPGN: one training epoch's time and peak memory as n grows
``iso``          ``matlang bench iso --dataset graph8c`` (100 seeds): wall time

Every case runs in a fresh process by default (``isolate``). :func:`run` writes
``perf.json`` (every case and a ``summary``), ``perf.md`` and ``scaling.png``, in ``results/perf/``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.perf.handwritten import HANDWRITTEN, LEVEL, SHORT
from benchmarks.perf.peer_groups import (
    PEER_GROUP_FUNCTIONS,
    PEER_GROUPS,
    PEER_TARGETS,
    peer_summary,
)
from benchmarks.perf.timing import available_bytes, load_average, loglog_fit, thread_env
from benchmarks.perf.workloads import Workload
from benchmarks.records import PERF_DIR, git_commit, versions
from matlang.evaluator import to_json

GROUPS = ("handwritten", "dense", "scaling", "backends", "models", "iso", *PEER_GROUPS)
SENTENCES = tuple(HANDWRITTEN)
L1, L3, TRACE = SENTENCES
SCALING_SENTENCES = (L3, TRACE)
ROOT = Path(__file__).resolve().parent.parent
#: The files a run writes in ``Config.out`` (with ``scaling.png``).
PERF_JSON, PERF_MD = "perf.json", "perf.md"

#: The issue's base range of the scaling runs is E = 10⁴ … 10⁶ (10⁷ "if memory allows"); the fit
#: over it is reported beside the fit over every size run.
BASE_RANGE_EDGES = 1.5e6

#: The issue's targets.
TARGETS = {
    "compiled_over_handwritten": "<= 1.2",
    "dense_over_compiled_n10000": ">= 100",
    "time_exponent": "<= 1.1",
    "memory_exponent": "<= 1.1",
    **PEER_TARGETS,
}


@dataclass(frozen=True)
class Config:
    """What to run, and how big. :meth:`quick` is a few-second version (the smoke test)."""

    groups: tuple[str, ...] = GROUPS
    out: Path = PERF_DIR  # results/perf/
    threads: int | None = 1
    isolate: bool = True
    progress: bool = True
    plot: bool = True
    #: replace only the groups run in ``out/perf.json``, keeping the other groups' cases
    update: bool = False
    warmup: int = 2
    repeats: int = 7
    budget_s: float = 20.0
    case_timeout_s: float = 3600.0
    handwritten_workloads: tuple[Workload, ...] = (
        Workload(10_000, 10.0),
        Workload(25, 4.0, graphs=64, sampler="generators"),
    )
    dense_sizes: tuple[int, ...] = (1_000, 10_000)
    dense_exact_max_n: int = 1_000
    dense_single_min_n: int = 10_000
    scaling_edges: tuple[int, ...] = (
        10**4,
        3 * 10**4,
        10**5,
        3 * 10**5,
        10**6,
        3 * 10**6,
        10**7,
    )
    scaling_mem_gib: float = 6.0
    scaling_max_call_s: float = 300.0
    backend_workloads: tuple[Workload, ...] = (
        Workload(10_000, 10.0),
        Workload(100_000, 10.0),
        Workload(25, 4.0, graphs=64, sampler="generators"),
    )
    model_sizes: tuple[int, ...] = (25, 50, 100, 200, 400, 800, 1600, 3200)
    model_degree: float = 5.0
    model_graphs: int = 4
    model_batch_size: int = 1
    model_mem_cap_gib: float = 6.0
    model_max_epoch_s: float = 300.0
    iso_models: tuple[str, ...] = ("compiled",)
    iso_seeds: int = 100
    iso_limit: int | None = None

    @classmethod
    def quick(cls, **changes: Any) -> Config:
        """Tiny sizes, one or two repeats: checks the machinery, not the performance."""
        small = Workload(200, 4.0)
        tiny_batch = Workload(10, 3.0, graphs=4, sampler="generators")
        base = cls(
            warmup=1,
            repeats=2,
            budget_s=1.0,
            handwritten_workloads=(small, tiny_batch),
            dense_sizes=(30, 60),
            dense_exact_max_n=60,
            dense_single_min_n=60,
            scaling_edges=(400, 1_600),
            backend_workloads=(small,),
            model_sizes=(8, 12),
            model_graphs=2,
            model_max_epoch_s=30.0,
            iso_seeds=2,
            iso_limit=200,
        )
        return dataclasses.replace(base, **changes)


# --------------------------------------------------------------------------- running cases


class Runner:
    """Runs cases (in fresh processes when ``config.isolate``) and keeps their results."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.results: list[dict[str, Any]] = []
        self._bar: Any = None

    def __enter__(self) -> Runner:
        from tqdm import tqdm

        self._bar = tqdm(desc="benchmarks", unit="case", disable=not self.config.progress)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.close()

    def case(
        self,
        group: str,
        case_id: str,
        workload: Workload,
        contestants: list[dict[str, Any]],
        **options: Any,
    ) -> dict[str, Any]:
        cfg = self.config
        spec: dict[str, Any] = {
            "id": case_id,
            "group": group,
            "workload": workload.to_dict(),
            "contestants": contestants,
            "warmup": cfg.warmup,
            "repeats": cfg.repeats,
            "budget_s": cfg.budget_s,
            "threads": cfg.threads,
            **options,
        }
        if self._bar is not None:
            self._bar.set_postfix_str(case_id[:60])
        result = self._isolated(spec) if cfg.isolate else self._inline(spec)
        if self._bar is not None:
            self._bar.update(1)
        self.results.append(result)
        return result

    def _inline(self, spec: dict[str, Any]) -> dict[str, Any]:
        from benchmarks.perf.cases import run_case

        try:
            return run_case(spec)
        except Exception as err:
            return _failed(spec, f"{type(err).__name__}: {err}")

    def _isolated(self, spec: dict[str, Any]) -> dict[str, Any]:
        from benchmarks.perf.worker import RESULT_PREFIX

        try:
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.perf.worker"],
                input=json.dumps(spec),
                capture_output=True,
                text=True,
                timeout=self.config.case_timeout_s,
                cwd=ROOT,
                env=thread_env(self.config.threads),
            )
        except subprocess.TimeoutExpired:
            return _failed(spec, f"timed out after {self.config.case_timeout_s:g} s")
        for line in reversed(proc.stdout.splitlines()):
            if line.startswith(RESULT_PREFIX):
                return json.loads(line[len(RESULT_PREFIX) :])
        why = f"exit status {proc.returncode}"
        if proc.returncode < 0:
            why = f"killed by signal {-proc.returncode}" + (
                " (out of memory?)" if proc.returncode == -9 else ""
            )
        return _failed(spec, why + ": " + proc.stderr.strip()[-500:])


def _failed(spec: dict[str, Any], error: str) -> dict[str, Any]:
    return {
        "id": spec["id"],
        "group": spec["group"],
        "workload": spec["workload"],
        "params": spec.get("params", {}),
        "error": error,
        "contestants": {c["name"]: {"error": error} for c in spec["contestants"]},
    }


def _ok(result: dict[str, Any], name: str) -> dict[str, Any] | None:
    c = result.get("contestants", {}).get(name)
    return c if c and "error" not in c and c.get("min_s") else None


def _ratio(result: dict[str, Any], num: str, den: str, key: str = "min_s") -> float | None:
    a, b = _ok(result, num), _ok(result, den)
    if a is None or b is None or not b[key]:
        return None
    return float(a[key] / b[key])


def _agree(result: dict[str, Any], a: str, b: str) -> bool | None:
    from benchmarks.perf.cases import agree

    x, y = _ok(result, a), _ok(result, b)
    if x is None or y is None:
        return None
    return agree(x["check"], y["check"])


# --------------------------------------------------------------------------- groups


def _compiled(name: str, sentence: str, **options: Any) -> dict[str, Any]:
    return {"name": name, "kind": "compiled", "sentence": sentence, **options}


def group_handwritten(r: Runner) -> None:
    for w in r.config.handwritten_workloads:
        for s in SENTENCES:
            res = r.case(
                "handwritten",
                f"handwritten/{SHORT[s]}/{w.label()}",
                w,
                [
                    _compiled("compiled", s),
                    _compiled("compiled+validate", s, validate=True),
                    {"name": "handwritten", "kind": "handwritten", "sentence": s},
                ],
                params={"sentence": s, "level": LEVEL[s]},
            )
            res["ratios"] = {
                "compiled_over_handwritten": _ratio(res, "compiled", "handwritten"),
                "compiled_over_handwritten_median": _ratio(
                    res, "compiled", "handwritten", "median_s"
                ),
                "validate_overhead": _ratio(res, "compiled+validate", "compiled"),
            }
            res["agree"] = _agree(res, "compiled", "handwritten")


def group_dense(r: Runner) -> None:
    cfg = r.config
    for n in cfg.dense_sizes:
        w = Workload(n, 10.0, sampler="generators")
        for s in SENTENCES:
            contestants = [
                _compiled("compiled", s, dtype="float64"),
                {
                    "name": "dense-float64",
                    "kind": "dense",
                    "sentence": s,
                    "exact": False,
                    "single": n >= cfg.dense_single_min_n,
                },
            ]
            if n <= cfg.dense_exact_max_n:
                contestants.append(
                    {"name": "dense-exact", "kind": "dense", "sentence": s, "exact": True}
                )
            res = r.case(
                "dense", f"dense/{SHORT[s]}/n={n}", w, contestants, params={"sentence": s, "n": n}
            )
            res["ratios"] = {
                "dense_float64_over_compiled": _ratio(res, "dense-float64", "compiled"),
                "dense_exact_over_compiled": _ratio(res, "dense-exact", "compiled"),
            }
            res["agree"] = _agree(res, "compiled", "dense-float64")


def group_scaling(r: Runner) -> None:
    """Growing E (avg degree 10) until the predicted peak memory or call time is too large; the
    hand-written implementation runs beside the compiled module, as the reference slope."""
    cfg = r.config
    for s in SCALING_SENTENCES:
        last: dict[str, Any] | None = None
        for e in cfg.scaling_edges:
            w = Workload(max(e // 10, 12), 10.0)
            skip = _scaling_skip(cfg, last, e)
            if skip:
                r.results.append(_skipped("scaling", f"scaling/{SHORT[s]}/E={e:.0e}", w, skip))
                continue
            res = r.case(
                "scaling",
                f"scaling/{SHORT[s]}/E={e:.0e}",
                w,
                [
                    _compiled("compiled", s),
                    {"name": "handwritten", "kind": "handwritten", "sentence": s},
                ],
                params={"sentence": s, "target_edges": e},
                min_repeats=2 if e < 10**6 else 1,
            )
            res["ratios"] = {"compiled_over_handwritten": _ratio(res, "compiled", "handwritten")}
            res["agree"] = _agree(res, "compiled", "handwritten")
            if _ok(res, "compiled"):
                last = res


def _skipped(group: str, case_id: str, w: Workload, why: str) -> dict[str, Any]:
    return {"id": case_id, "group": group, "workload": w.to_dict(), "skipped": why}


def _scaling_skip(cfg: Config, last: dict[str, Any] | None, e: int) -> str | None:
    if last is None:
        return None
    c = last["contestants"]["compiled"]
    grow = e / max(last["workload"]["edges"], 1)
    peak = (c["peak_mib"] + c["baseline_mib"]) * 2**20 * grow * 1.25
    limit = cfg.scaling_mem_gib * 2**30
    avail = available_bytes()
    if avail is not None:
        limit = min(limit, 0.5 * avail)
    if peak > limit:
        return (
            f"predicted peak RSS {peak / 2**30:.1f} GiB exceeds {limit / 2**30:.1f} GiB "
            f"(min of {cfg.scaling_mem_gib:g} GiB and half the available memory)"
        )
    call = c["min_s"] * grow * 1.25
    if call > cfg.scaling_max_call_s:
        return f"predicted {call:.0f} s per call exceeds {cfg.scaling_max_call_s:g} s"
    return None


def group_backends(r: Runner) -> None:
    for w in r.config.backend_workloads:
        for s in SENTENCES:
            res = r.case(
                "backends",
                f"backends/{SHORT[s]}/{w.label()}",
                w,
                [
                    _compiled("torch_sparse", s, backend="torch_sparse"),
                    _compiled("torch", s, backend="torch"),
                ],
                params={"sentence": s},
            )
            res["ratios"] = {"torch_over_torch_sparse": _ratio(res, "torch", "torch_sparse")}
            res["agree"] = _agree(res, "torch", "torch_sparse")


def group_models(r: Runner) -> None:
    """Each model grows n until an epoch fails (memory cap) or takes too long."""
    cfg = r.config
    for model in ("gnnml3", "ppgn"):
        stop: str | None = None
        for n in cfg.model_sizes:
            w = Workload(n, cfg.model_degree, graphs=cfg.model_graphs, sampler="generators")
            case_id = f"models/{model}/n={n}"
            if stop:
                r.results.append(_skipped("models", case_id, w, stop))
                continue
            res = r.case(
                "models",
                case_id,
                w,
                [
                    {
                        "name": model,
                        "kind": "train",
                        "model": model,
                        "batch_size": cfg.model_batch_size,
                    }
                ],
                params={"model": model, "n": n},
                mem_cap_gib=cfg.model_mem_cap_gib,
                max_call_s=cfg.model_max_epoch_s,
                repeats=3,
                min_repeats=1,
            )
            c = _ok(res, model)
            k = cfg.model_sizes.index(n)
            grow = cfg.model_sizes[k + 1] / n if k + 1 < len(cfg.model_sizes) else 1.0
            if c is None:
                err = res.get("contestants", {}).get(model, {}).get("error", res.get("error"))
                stop = f"not run: n={n} failed ({err})"[:400]
            elif c["min_s"] * grow ** MODEL_TIME_ORDER[model] > cfg.model_max_epoch_s:
                stop = (
                    f"not run: an epoch at n={n} took {c['min_s']:.1f} s, so about "
                    f"{c['min_s'] * grow ** MODEL_TIME_ORDER[model]:.0f} s predicted at the next n "
                    f"(O(n^{MODEL_TIME_ORDER[model]:g})), beyond {cfg.model_max_epoch_s:g} s"
                )


def group_iso(r: Runner) -> None:
    """``matlang bench iso --dataset graph8c`` for each model, when the command exists."""
    cfg = r.config
    for model in cfg.iso_models:
        cmd = [
            sys.executable,
            "-m",
            "matlang.cli",
            "bench",
            "iso",
            "--dataset",
            "graph8c",
            "--model",
            model,
            "--seeds",
            str(cfg.iso_seeds),
            "--json",
            "--no-save",
            "--no-progress",
        ]
        if cfg.threads:
            cmd += ["--threads", str(cfg.threads)]
        if cfg.iso_limit:
            cmd += ["--limit", str(cfg.iso_limit)]
        res: dict[str, Any] = {
            "id": f"iso/graph8c/{model}",
            "group": "iso",
            "command": "matlang " + " ".join(cmd[3:]),
            "params": {"model": model, "seeds": cfg.iso_seeds, "limit": cfg.iso_limit},
            "load_average": load_average(),
        }
        t = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=cfg.case_timeout_s,
                cwd=ROOT,
                env=thread_env(cfg.threads),
            )
        except subprocess.TimeoutExpired:
            res["error"] = f"timed out after {cfg.case_timeout_s:g} s"
        else:
            res["process_wall_s"] = round(time.perf_counter() - t, 3)
            lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
            if proc.returncode == 0 and lines:
                res["summary"] = json.loads(lines[-1])
            else:
                res["error"] = f"exit status {proc.returncode}: {proc.stderr.strip()[-500:]}"
        if r._bar is not None:
            r._bar.update(1)
        r.results.append(res)


#: How an epoch's time grows with n on sparse graphs of fixed degree: GNNML3 is linear in the
#: edges of M = A + I; PPGN multiplies dense n×n matrices.
MODEL_TIME_ORDER = {"gnnml3": 1.0, "ppgn": 3.0}


GROUP_FUNCTIONS: dict[str, Callable[[Runner], None]] = {
    "handwritten": group_handwritten,
    "dense": group_dense,
    "scaling": group_scaling,
    "backends": group_backends,
    "models": group_models,
    "iso": group_iso,
    **PEER_GROUP_FUNCTIONS,
}


# --------------------------------------------------------------------------- summary


def _fit(results: Sequence[dict[str, Any]], sentence: str, name: str) -> dict[str, Any] | None:
    pts = []
    for res in results:
        if res["group"] != "scaling" or res.get("params", {}).get("sentence") != sentence:
            continue
        c = _ok(res, name)
        if c is not None:
            pts.append((res["workload"]["edges"], c["min_s"], c["peak_mib"]))
    if not pts:
        return None
    pts.sort()
    e, t, m = (list(x) for x in zip(*pts))
    top = [i for i, x in enumerate(e) if x >= e[-1] / 10]  # the last decade
    base = [i for i, x in enumerate(e) if x <= BASE_RANGE_EDGES]
    return {
        "edges": e,
        "min_s": t,
        "peak_mib": m,
        "time_exponent": loglog_fit(e, t),
        "memory_exponent": loglog_fit(e, m),
        "time_exponent_last_decade": loglog_fit([e[i] for i in top], [t[i] for i in top]),
        "memory_exponent_last_decade": loglog_fit([e[i] for i in top], [m[i] for i in top]),
        "time_exponent_base_range": loglog_fit([e[i] for i in base], [t[i] for i in base]),
        "edge_range": [e[0], e[-1]],
    }


def scaling_fits(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per sentence: the compiled module's points (E, time, memory) and fitted exponents, and
    the same for the hand-written implementation under ``"handwritten"`` (the reference)."""
    fits: dict[str, dict[str, Any]] = {}
    for s in SCALING_SENTENCES:
        fit = _fit(results, s, "compiled")
        if fit is not None:
            fits[s] = {**fit, "handwritten": _fit(results, s, "handwritten")}
    return fits


def _worst(
    results: Sequence[dict[str, Any]],
    group: str,
    key: str,
    pick: Callable[..., Any],
    where: Callable[[dict[str, Any]], bool] = lambda r: True,
) -> tuple[float | None, str | None]:
    vals = [
        (r["ratios"][key], r["id"])
        for r in results
        if r["group"] == group and where(r) and r.get("ratios", {}).get(key) is not None
    ]
    if not vals:
        return None, None
    v, case = pick(vals, key=lambda x: x[0])
    return v, case


def summarize(results: Sequence[dict[str, Any]], config: Config) -> dict[str, Any]:
    """The ``summary`` object of ``perf.json`` (worst cases, see :data:`TARGETS`)."""
    s: dict[str, Any] = {}
    s["compiled_over_handwritten"], s["compiled_over_handwritten_case"] = _worst(
        results, "handwritten", "compiled_over_handwritten", max
    )
    s["compiled_over_handwritten_median"], _ = _worst(
        results, "handwritten", "compiled_over_handwritten_median", max
    )
    s["validate_overhead"], s["validate_overhead_case"] = _worst(
        results, "handwritten", "validate_overhead", max
    )
    s["dense_over_compiled_n10000"], s["dense_over_compiled_n10000_case"] = _worst(
        results,
        "dense",
        "dense_float64_over_compiled",
        min,
        lambda r: r.get("params", {}).get("n") == 10_000,
    )
    sizes = [r["params"]["n"] for r in results if r["group"] == "dense" and "params" in r]
    if sizes:
        largest = max(sizes)
        v, case = _worst(
            results,
            "dense",
            "dense_float64_over_compiled",
            min,
            lambda r: r.get("params", {}).get("n") == largest,
        )
        s["dense_over_compiled_largest"] = {"n": largest, "ratio": v, "case": case}
    s["dense_exact_over_compiled"], _ = _worst(results, "dense", "dense_exact_over_compiled", min)
    fits = scaling_fits(results)
    for key in ("time_exponent", "memory_exponent"):
        vals = [(f[key], sent) for sent, f in fits.items() if f[key] is not None]
        s[key], s[key + "_case"] = max(vals) if vals else (None, None)
    ref = [
        f["handwritten"]["time_exponent"]
        for f in fits.values()
        if f.get("handwritten") and f["handwritten"]["time_exponent"] is not None
    ]
    s["handwritten_time_exponent"] = max(ref) if ref else None
    mine = [f["time_exponent_base_range"] for f in fits.values()]
    hand = [(f.get("handwritten") or {}).get("time_exponent_base_range") for f in fits.values()]
    for key, exps in (
        ("time_exponent_base_range", mine),
        ("handwritten_time_exponent_base_range", hand),
    ):
        known = [v for v in exps if v is not None]
        s[key] = max(known) if known else None
    s["scaling_edge_range"] = (
        [
            min(f["edge_range"][0] for f in fits.values()),
            max(f["edge_range"][1] for f in fits.values()),
        ]
        if fits
        else None
    )
    lo, _ = _worst(results, "backends", "torch_over_torch_sparse", min)
    hi, _ = _worst(results, "backends", "torch_over_torch_sparse", max)
    s["torch_over_torch_sparse"] = {"min": lo, "max": hi} if lo is not None else None
    for model in ("gnnml3", "ppgn"):
        ok = [
            r["params"]["n"]
            for r in results
            if r["group"] == "models"
            and r.get("params", {}).get("model") == model
            and _ok(r, model)
        ]
        s[f"{model}_largest_n"] = max(ok) if ok else None
    iso = {
        r["params"]["model"]: r["summary"]["wall_seconds"]
        for r in results
        if r["group"] == "iso" and "summary" in r
    }
    s["iso_graph8c_wall_s"] = iso or None
    s.update(peer_summary(results))
    s["agree"] = all(r.get("agree") is not False for r in results)
    met: dict[str, bool | None] = {}
    for key, target in TARGETS.items():
        v = s.get(key)
        op, bound = target.split()
        met[key] = None if v is None else (v <= float(bound) if op == "<=" else v >= float(bound))
    s["targets"] = TARGETS
    s["met"] = met
    return s


# --------------------------------------------------------------------------- entry point


def _meta(config: Config) -> dict[str, Any]:
    import platform

    import torch

    from benchmarks.perf.timing import memory_method

    meta: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "load_average_start": load_average(),
        "cpus": os.cpu_count(),
        "memory_available_gib": round((available_bytes() or 0) / 2**30, 1),
        "threads": config.threads or torch.get_num_threads(),
        "isolated_processes": config.isolate,
        "timing": "time.perf_counter per call; min and median over the repeats after warm-up; "
        "contestants of a case interleaved; ratios are of min times",
        "memory": memory_method(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "config": to_json(dataclasses.asdict(config)),
    }
    meta["git_commit"] = git_commit()
    meta["versions"] = versions()
    return meta


def _updated(
    path: Path, meta: dict[str, Any], results: list[dict[str, Any]], groups: Sequence[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The earlier run at ``path`` with the cases of ``groups`` replaced by ``results``; its
    ``meta`` stays, this run's is appended under ``meta["updates"]``."""
    if not path.is_file():
        return meta, results
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        kept = [c for c in old["cases"] if c["group"] not in groups]
        old_meta = dict(old["meta"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"--update: cannot read the earlier run {path}: {e}") from None
    order = {g: i for i, g in enumerate(GROUPS)}
    merged = sorted([*kept, *results], key=lambda c: order.get(c["group"], len(order)))
    old_meta["updates"] = [*old_meta.get("updates", []), {**meta, "groups": list(groups)}]
    return old_meta, merged


def rewrite(out: Path, config: Config | None = None) -> dict[str, Any]:
    """Recompute the summary of ``out/perf.json`` from its cases and rewrite it and
    ``perf.md`` (no case is run; the meta, with its commits, stays)."""
    path = Path(out) / PERF_JSON
    data = json.loads(path.read_text(encoding="utf-8"))
    cfg = config or Config(out=Path(out))
    data["summary"] = summarize(data["cases"], cfg)
    data["scaling"] = scaling_fits(data["cases"])
    _write(data, cfg)
    return data


def _write(data: dict[str, Any], config: Config) -> None:
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / PERF_JSON).write_text(
        json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    from benchmarks.perf.peer_report import peer_markdown
    from benchmarks.perf.report import markdown

    peers = peer_markdown(data)
    text = markdown(data) + ("\n" + "\n".join(peers).rstrip() + "\n" if peers else "")
    (out / PERF_MD).write_text(text, encoding="utf-8")
    if config.plot and data["scaling"]:
        from benchmarks.perf.plot import plot_scaling

        plot_scaling(data, out / "scaling.png")


def run(config: Config) -> dict[str, Any]:
    """Run the configured groups; write ``perf.json``, ``perf.md`` and ``scaling.png``."""
    unknown = [g for g in config.groups if g not in GROUP_FUNCTIONS]
    if unknown:
        raise ValueError(f"unknown group(s) {', '.join(unknown)}; known: {', '.join(GROUPS)}")
    meta = _meta(config)
    t = time.perf_counter()
    with Runner(config) as r:
        for g in config.groups:
            GROUP_FUNCTIONS[g](r)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    meta["load_average_end"] = load_average()
    meta["wall_s"] = round(time.perf_counter() - t, 1)
    out = Path(config.out)
    results = r.results
    if config.update:
        meta, results = _updated(out / PERF_JSON, meta, results, config.groups)
    data: dict[str, Any] = {
        "meta": meta,
        "summary": summarize(results, config),
        "scaling": scaling_fits(results),
        "cases": results,
    }
    _write(data, config)
    return data


__all__ = [
    "GROUPS",
    "SENTENCES",
    "TARGETS",
    "Config",
    "Runner",
    "loglog_fit",
    "rewrite",
    "run",
    "scaling_fits",
    "summarize",
]
