"""``perf.md``: the benchmark results as Markdown tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.perf.handwritten import SHORT


def fmt_time(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def fmt_ratio(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.0f}×"
    return f"{x:.{digits}f}×"


def fmt_mib(x: float | None) -> str:
    return "—" if x is None else f"{x:,.1f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def _c(res: dict[str, Any], name: str) -> dict[str, Any]:
    return res.get("contestants", {}).get(name, {})


def _t(res: dict[str, Any], name: str) -> str:
    c = _c(res, name)
    if "skipped" in c:
        return "skipped: " + c["skipped"].split(" (")[0]
    if "error" in c:
        return "error"
    if c.get("min_s") is None:
        return "—"
    if c.get("repeats", 0) > 1:
        return f"{fmt_time(c['min_s'])} / {fmt_time(c['median_s'])}"
    return f"{fmt_time(c['min_s'])} (1 run)"


def _m(res: dict[str, Any], name: str) -> str:
    return fmt_mib(_c(res, name).get("peak_mib"))


def _agree(res: dict[str, Any]) -> str:
    a = res.get("agree")
    return "—" if a is None else ("yes" if a else "**NO**")


def _of(data: dict[str, Any], group: str) -> list[dict[str, Any]]:
    return [r for r in data["cases"] if r["group"] == group]


def _summary(data: dict[str, Any]) -> list[str]:
    s = data["summary"]
    met = s.get("met", {})

    def ok(key: str) -> str:
        v = met.get(key)
        return "—" if v is None else ("met" if v else "**missed**")

    rows = [
        [
            "compiled / hand-written (worst case, min times)",
            fmt_ratio(s.get("compiled_over_handwritten")),
            s["targets"]["compiled_over_handwritten"],
            ok("compiled_over_handwritten"),
            str(s.get("compiled_over_handwritten_case") or "—"),
        ],
        [
            "dense float64 / compiled at n = 10⁴ (worst case)",
            fmt_ratio(s.get("dense_over_compiled_n10000")),
            s["targets"]["dense_over_compiled_n10000"],
            ok("dense_over_compiled_n10000"),
            str(s.get("dense_over_compiled_n10000_case") or "—"),
        ],
        [
            "time exponent (log–log fit, worst sentence)",
            _exp(s.get("time_exponent")),
            s["targets"]["time_exponent"],
            ok("time_exponent"),
            str(s.get("time_exponent_case") or "—"),
        ],
        [
            "memory exponent (log–log fit, worst sentence)",
            _exp(s.get("memory_exponent")),
            s["targets"]["memory_exponent"],
            ok("memory_exponent"),
            str(s.get("memory_exponent_case") or "—"),
        ],
    ]
    from benchmarks.perf.peer_groups import PEER_LABELS

    for key, label in PEER_LABELS.items():
        if s.get(key) is not None:
            value = f"{s[key]:.3f}" if key == "constants_exponent_gap" else fmt_ratio(s[key])
            case = s.get(key + "_case")
            rows.append([label, value, s["targets"][key], ok(key), str(case or "—")])
    lines = _table(["measure", "value", "target", "", "worst case"], rows)
    extra = []
    if s.get("time_exponent_base_range") is not None:
        hand = s.get("handwritten_time_exponent_base_range")
        extra.append(
            f"- time exponent over E ≤ 10⁶ only (the issue's base range): "
            f"{_exp(s['time_exponent_base_range'])}"
            + (f" (hand-written {_exp(hand)})" if hand is not None else "")
            + f"; over the whole range the hand-written reference's is "
            f"{_exp(s.get('handwritten_time_exponent'))}."
        )
    if s.get("validate_overhead") is not None:
        extra.append(
            f"- input validation (`validate=True`, the default) costs up to "
            f"{fmt_ratio(s['validate_overhead'])} the unvalidated call "
            f"({s.get('validate_overhead_case')})."
        )
    if s.get("dense_exact_over_compiled") is not None:
        extra.append(
            f"- dense exact / compiled: at least {fmt_ratio(s['dense_exact_over_compiled'])} "
            "(the exact mode is run at n ≤ 10³ only)."
        )
    tb = s.get("torch_over_torch_sparse")
    if tb:
        extra.append(
            f"- pure torch / torch_sparse backend: {fmt_ratio(tb['min'])} to "
            f"{fmt_ratio(tb['max'])}."
        )
    for model in ("gnnml3", "ppgn"):
        if s.get(f"{model}_largest_n") is not None:
            extra.append(f"- {model}: largest n trained = {s[f'{model}_largest_n']:,}.")
    if s.get("iso_graph8c_wall_s"):
        for model, sec in s["iso_graph8c_wall_s"].items():
            extra.append(f"- graph8c isomorphism run, `{model}`: {sec:.0f} s wall.")
    if not s.get("agree", True):
        extra.append("- **some contestants disagree on the value**: see the tables.")
    return lines + extra + [""]


def _exp(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _handwritten(data: dict[str, Any]) -> list[str]:
    rows = []
    for r in _of(data, "handwritten"):
        ratios = r.get("ratios", {})
        rows.append(
            [
                SHORT.get(r["params"]["sentence"], r["params"]["sentence"]),
                _workload(r),
                _t(r, "compiled"),
                _t(r, "handwritten"),
                fmt_ratio(ratios.get("compiled_over_handwritten")),
                fmt_ratio(ratios.get("validate_overhead")),
                f"{_m(r, 'compiled')} / {_m(r, 'handwritten')}",
                _agree(r),
            ]
        )
    head = [
        "sentence",
        "graphs",
        "compiled min / median",
        "hand-written min / median",
        "ratio",
        "validate=True costs",
        "peak MiB (c / hw)",
        "same value",
    ]
    how = (
        "Both sides are called on the same tensors, wrapped in a fresh `Batch` object per call, "
        "so the compiled module remembers nothing between calls; `validate=True` is a full "
        "validation on every call (a batch used again, as in training, is validated once)."
    )
    return ["## Compiled vs hand-written torch-sparse", "", how, "", *_table(head, rows)]


def _workload(r: dict[str, Any]) -> str:
    w = r["workload"]
    label = w.get("label") or f"n={w['n']}"
    return f"{label}, E={w['edges']:,}" if "edges" in w else label


def _dense(data: dict[str, Any]) -> list[str]:
    rows = []
    for r in _of(data, "dense"):
        ratios = r.get("ratios", {})
        rows.append(
            [
                SHORT.get(r["params"]["sentence"], r["params"]["sentence"]),
                f"{r['params']['n']:,}",
                _t(r, "compiled"),
                _t(r, "dense-float64"),
                fmt_ratio(ratios.get("dense_float64_over_compiled")),
                _t(r, "dense-exact"),
                fmt_ratio(ratios.get("dense_exact_over_compiled")),
                f"{_m(r, 'compiled')} / {_m(r, 'dense-float64')}",
                _agree(r),
            ]
        )
    head = [
        "sentence",
        "n",
        "compiled (float64)",
        "dense float64",
        "dense / compiled",
        "dense exact",
        "exact / compiled",
        "peak MiB (c / dense)",
        "same value",
    ]
    return [
        "## Compiled (sparse) vs the dense evaluator",
        "",
        "Erdős–Rényi, average degree 10 (`runtime.generators.erdos_renyi`). Compiled in float64 "
        "to match the dense float64 mode.",
        "",
        *_table(head, rows),
    ]


def _scaling(data: dict[str, Any]) -> list[str]:
    rows = []
    for r in _of(data, "scaling"):
        w = r["workload"]
        if "skipped" in r:
            size = f"~{r['id'].split('E=')[-1]}"
            rows.append([_sentence(r), size, f"{w['n']:,}", "skipped", r["skipped"], "", "", ""])
            continue
        c = _c(r, "compiled")
        rows.append(
            [
                _sentence(r),
                f"{w.get('edges', 0):,}",
                f"{w['n']:,}",
                _t(r, "compiled"),
                "error: " + c["error"] if "error" in c else fmt_mib(c.get("peak_mib")),
                _t(r, "handwritten"),
                _m(r, "handwritten"),
                fmt_ratio(r.get("ratios", {}).get("compiled_over_handwritten")),
            ]
        )
    fits = []
    for s, f in data.get("scaling", {}).items():
        for who, g in (("compiled", f), ("hand-written", f.get("handwritten"))):
            if not g:
                continue
            fits.append(
                [
                    SHORT.get(s, s),
                    who,
                    f"{g['edge_range'][0]:,} – {g['edge_range'][1]:,}",
                    _exp(g["time_exponent"]),
                    _exp(g["memory_exponent"]),
                    _exp(g.get("time_exponent_base_range")),
                    _exp(g["time_exponent_last_decade"]),
                    _exp(g["memory_exponent_last_decade"]),
                ]
            )
    head = [
        "sentence",
        "E (directed entries)",
        "n",
        "compiled min / median",
        "compiled peak MiB",
        "hand-written min / median",
        "hand-written peak MiB",
        "ratio",
    ]
    fit_head = [
        "sentence",
        "",
        "E range",
        "time exponent",
        "memory exponent",
        "time, E ≤ 10⁶",
        "time, last decade",
        "memory, last decade",
    ]
    return [
        "## Scaling on Erdős–Rényi graphs (average degree 10)",
        "",
        "One graph per size, drawn in O(E) memory "
        "(`benchmarks.perf.workloads.sparse_erdos_renyi`); "
        "default backend, float32; the hand-written implementation runs beside the compiled "
        "module as a reference. Exponents are least-squares slopes of log(time) and "
        "log(peak MiB) against log(E).",
        "",
        *_table(head, rows),
        *_table(fit_head, fits),
        "![scaling](scaling.png)",
        "",
    ]


def _sentence(r: dict[str, Any]) -> str:
    s = r.get("params", {}).get("sentence") or r["id"].split("/")[1]
    return SHORT.get(s, s)


def _backends(data: dict[str, Any]) -> list[str]:
    rows = []
    for r in _of(data, "backends"):
        rows.append(
            [
                _sentence(r),
                _workload(r),
                _t(r, "torch_sparse"),
                _t(r, "torch"),
                fmt_ratio(r.get("ratios", {}).get("torch_over_torch_sparse")),
                f"{_m(r, 'torch_sparse')} / {_m(r, 'torch')}",
                _agree(r),
            ]
        )
    head = [
        "sentence",
        "graphs",
        "torch_sparse",
        "pure torch",
        "torch / torch_sparse",
        "peak MiB (ts / torch)",
        "same value",
    ]
    return ["## Backends: torch_sparse vs pure torch (same plans)", "", *_table(head, rows)]


def _models(data: dict[str, Any]) -> list[str]:
    by_n: dict[int, dict[str, dict[str, Any]]] = {}
    for r in _of(data, "models"):
        by_n.setdefault(r["workload"]["n"], {})[r["id"].split("/")[1]] = r
    rows = []
    for n in sorted(by_n):
        row = [f"{n:,}"]
        for model in ("gnnml3", "ppgn"):
            found = by_n[n].get(model)
            if found is None:
                row += ["—", "—", "—"]
                continue
            r = found
            if "skipped" in r:
                row += ["not run", "—", r["skipped"]]
                continue
            c = _c(r, model)
            if "error" in c:
                row += ["failed", "—", c["error"][:120]]
                continue
            note = (
                f"first epoch {fmt_time(c.get('prepare_s'))}, "
                f"{fmt_mib(c.get('prepare_peak_mib'))} MiB"
            )
            row += [_t(r, model), fmt_mib(c.get("peak_mib")), note]
        rows.append(row)
    cfg = data["meta"].get("config", {})
    head = [
        "n",
        "GNNML3 epoch",
        "GNNML3 peak MiB",
        "GNNML3 note",
        "PPGN epoch",
        "PPGN peak MiB",
        "PPGN note",
    ]
    return [
        "## GNNML3 vs PPGN: one training epoch",
        "",
        f"Epoch = {cfg.get('model_graphs', '?')} Erdős–Rényi graphs of n nodes (average degree "
        f"{cfg.get('model_degree', '?')}), batch size {cfg.get('model_batch_size', '?')}, Adam, "
        "MSE to random targets, the models' `count` configurations. Each size runs in its own "
        f"process under a {cfg.get('model_mem_cap_gib', '?')} GiB address-space cap. The first "
        "epoch (GNNML3: with its spectral preprocessing, dense O(n³)) is measured apart, in "
        "the notes; the epoch columns are the epochs after it.",
        "",
        *_table(head, rows),
    ]


def _iso(data: dict[str, Any]) -> list[str]:
    out = ["## graph8c isomorphism test (Table 1 protocol)", ""]
    for r in _of(data, "iso"):
        if "skipped" in r:
            out.append(f"- not run: {r['skipped']}")
        elif "error" in r:
            out.append(f"- `{r.get('command')}`: failed ({r['error'][:200]})")
        else:
            s = r["summary"]
            out.append(
                f"- `{r['command']}`: {s['wall_seconds']:.0f} s wall, "
                f"{s['undistinguished']} of {s['pairs']:,} pairs undistinguished "
                f"(load average before: {r.get('load_average')})"
            )
    return out + [""]


def markdown(data: dict[str, Any]) -> str:
    """The whole ``perf.md``."""
    m = data["meta"]
    head = [
        "# matlang benchmarks",
        "",
        f"Generated by `python -m benchmarks` (or `matlang bench perf`), {m.get('started')} → "
        f"{m.get('finished')} ({m.get('wall_s')} s), commit `{m.get('git_commit')}`.",
        "",
        f"- machine: {m.get('cpus')} CPUs, shared; load average {m.get('load_average_start')} "
        f"at the start, {m.get('load_average_end')} at the end; torch {m.get('torch')}, "
        f"{m.get('threads')} thread(s) per process.",
        f"- time: {m.get('timing')}.",
        f"- memory: {m.get('memory')}.",
        *(
            f"- updated (`--update`): group(s) {', '.join(u.get('groups', []))} re-run "
            f"{u.get('started')} → {u.get('finished')}, commit `{u.get('git_commit')}`."
            for u in m.get("updates", [])
        ),
        "",
        "## Summary",
        "",
    ]
    groups = {r["group"] for r in data["cases"]}
    body = _summary(data)
    for g, fn in (
        ("handwritten", _handwritten),
        ("dense", _dense),
        ("scaling", _scaling),
        ("backends", _backends),
        ("models", _models),
        ("iso", _iso),
    ):
        if g in groups:
            body += fn(data)
    return "\n".join(head + body).rstrip() + "\n"


__all__ = ["fmt_mib", "fmt_ratio", "fmt_time", "markdown"]
