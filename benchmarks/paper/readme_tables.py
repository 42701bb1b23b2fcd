"""The tables of ``results/README.md`` rendered from the result files.

Each renderer takes the result folder and returns a Markdown table; ``benchmarks.paper.quoted``
puts it between ``<!-- rendered: NAME -->`` and ``<!-- /rendered -->`` (``--render``) and its
test re-renders and compares. A cell whose file is missing reads "–" (not run), never a number
typed here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.paper.brec import CATEGORIES, CATEGORY_SIZES, PUBLISHED

TU_DATASETS = ("mutag", "ptc", "enzymes", "proteins")
TU_MODELS = ("mlp", "gcn", "gat", "gin", "chebnet", "ppgn", "gnnml1", "gnnml3", "sentence",
             "gin+features")


def _load(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / name
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _acc(data: dict[str, Any] | None, *, paper: bool = True) -> str:
    if data is None or data.get("mean_accuracy") is None:
        return "–"
    ours = f"{data['mean_accuracy']:.1f} ± {data['std_accuracy']:.1f}"
    p = data.get("paper") or {}
    if not paper:
        return ours
    return f"{ours} / {p['mean']:.1f}" if p.get("mean") is not None else f"{ours} / –"


def tu_table(folder: Path) -> str:
    """The paper's protocol: mean ± std at the best mean epoch / the paper's mean."""
    head = "| model | " + " | ".join(f"{d.upper()} (ours / paper)" for d in TU_DATASETS) + " |"
    rows = [head, "|---" * (len(TU_DATASETS) + 1) + "|"]
    for model in TU_MODELS:
        cells = [_acc(_load(folder, f"tu-{d}-{model}.json")) for d in TU_DATASETS]
        rows.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def tu_authors_table(folder: Path) -> str:
    """The authors' per-dataset settings (``--protocol authors``) and their architectures
    (``--arch authors``), with each model's parameter count (the paper's budget is ~30K)."""
    rows = [
        "| file | ours (best mean epoch) | last epoch | paper | parameters |",
        "|---|---|---|---|---|",
    ]
    names = sorted(p.name for p in folder.glob("tu-*.authors*.json"))
    for name in names:
        data = _load(folder, name)
        if data is None or data.get("mean_accuracy") is None or data.get("partial"):
            continue
        last = f"{data['last_epoch_mean_accuracy']:.1f}"
        paper = (data.get("paper") or {}).get("mean")
        params = (data.get("model_info") or {}).get("parameters")
        rows.append(
            f"| `{name}` | {_acc(data, paper=False)} | {last} | "
            f"{'–' if paper is None else f'{paper:.1f}'} | "
            f"{'–' if params is None else f'{params:,}'} |"
        )
    return "\n".join(rows) + "\n"


#: BREC rows: label → result file (under the result folder).
BREC_ROWS: tuple[tuple[str, str], ...] = (
    ("1-WL", "brec-1-wl.json"),
    ("3-WL (2-FWL)", "brec-3-wl.json"),
    ("bank L1, size ≤ 14", "brec-bank-L1-k14.json"),
    ("bank L2, size ≤ 12", "brec-bank-L2-k12.json"),
    ("bank L3, size ≤ 10", "brec-bank-L3-k10.json"),
    ("bank L3, size ≤ 12", "brec-bank-L3-k12.json"),
    ("bank L3, size ≤ 14", "brec-bank-L3-k14.json"),
    ("bank L3, size ≤ 16", "brec-bank-L3-k16.json"),
    ("bank L3, refinement sentences ≤ 10 rounds", "brec-bank-L3-r10.json"),
    ("MLP (RPC)", "brec-mlp.json"),
    ("GCN (RPC)", "brec-gcn.json"),
    ("GNNML1 (RPC)", "brec-gnnml1.json"),
    ("GAT (RPC)", "brec-gat.json"),
    ("GIN (RPC)", "brec-gin.json"),
    ("ChebNet (RPC)", "brec-chebnet.json"),
    ("GNNML3 (RPC)", "brec-gnnml3.json"),
    ("PPGN, the appendix's (RPC)¹", "brec-ppgn.json"),
    ("PPGN, BREC's configuration (RPC)²", "brec-ppgn.brec.json"),
    ("PPGN, BREC's configuration, float64 (RPC)²", "brec-ppgn.brec.float64.json"),
    ("PPGN, BREC's configuration and initialisation (RPC)³", "brec-ppgn.brec-xavier.json"),
)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.0f} min"


def brec_table(folder: Path) -> str:
    """Pairs separated per category (of the pairs run, where a row ran fewer), the row's time."""
    cats = (*CATEGORIES, "Total")
    sizes = {**CATEGORY_SIZES, "Total": sum(CATEGORY_SIZES.values())}
    rows = [
        "| row | " + " | ".join(f"{c} ({sizes[c]})" for c in cats) + " | time |",
        "|---" * (len(cats) + 2) + "|",
    ]
    for label, name in BREC_ROWS:
        data = _load(folder, name)
        if data is None:
            rows.append(f"| {label} | " + " | ".join("–" for _ in cats) + " | not run |")
            continue
        counts, run = data["counts"], data.get("run_per_category") or sizes
        cells = [
            str(counts[c]) if run.get(c, sizes[c]) == sizes[c] else f"{counts[c]}/{run[c]}"
            for c in cats
        ]
        rows.append(f"| {label} | " + " | ".join(cells) + f" | {_duration(data['seconds'])} |")
    for name, counts_p in PUBLISHED.items():
        cells = ["–" if counts_p.get(c) is None else str(counts_p[c]) for c in cats]
        rows.append(f"| {name} (published) | " + " | ".join(cells) + " | |")
    return "\n".join(rows) + "\n"


RENDERERS: dict[str, Callable[[Path], str]] = {
    "tu-table": tu_table,
    "tu-authors-table": tu_authors_table,
    "brec-table": brec_table,
}


#: The sentences the paper names, as ``results/README.md`` classifies them: (where, sentence).
PAPER_SENTENCES: tuple[tuple[str, str], ...] = (
    ("Theorem 3: 3-stars", "let f(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ f(A𝟏)"),
    ("Theorem 4: triangles", "tr(A^3) / 6"),
    ("Theorem 4: 4-cycles", "1/8 * (tr(A^4) + tr(A^2) - 2 * 𝟏ᵀ A² 𝟏)"),
    ("Theorem 5: tailed triangles", "1/2 * 𝟏ᵀ (A³ ⊙ diag(A𝟏 - 2𝟏)) 𝟏"),
    ("§6 custom e_c", "𝟏ᵀ A diag(exp(-A²𝟏)) A 𝟏"),
    ("§4 / App. B: closed 5-walks", "tr(A^5)"),
    ("§4 / App. C: ⊙ beats cospectrality", "let f(x) = x*x; 𝟏ᵀ f((A ⊙ A²)² 𝟏)"),
    ("Def. 1 example", "𝟏ᵀ A² 𝟏"),
    ("Thm 1 proof: GCN support",
     "let f(x) = x^(-1/2); 𝟏ᵀ diag(f(A𝟏 + 𝟏)) (A + I) diag(f(A𝟏 + 𝟏)) 𝟏"),
    ("Thm 1 proof: GraphSage support", "let g(x) = 1/x; 𝟏ᵀ diag(g(A𝟏)) A 𝟏"),
    ("Thm 1 proof: GIN support (ε = 0.5)", "𝟏ᵀ (A + 0.5 I) 𝟏"),
    ("Thm 2 proof: normalized Laplacian",
     "let f(x) = x^(-1/2); 𝟏ᵀ (I - diag(f(A𝟏)) A diag(f(A𝟏))) 𝟏"),
    ("Thm 2 / App. B: ChebNet C⁽²⁾, λmax = 2",
     "let f(x) = x^(-1/2); 𝟏ᵀ ((I - diag(f(A𝟏)) A diag(f(A𝟏))) - I) 𝟏"),
    ("Thm 2 proof: ChebNet C⁽³⁾ = 2C⁽²⁾C⁽²⁾ − I (L = diag(A𝟏) − A, α = 0.5)",
     "let C2 = 0.5 L - I; 𝟏ᵀ (2 C2 C2 - I) 𝟏"),
    ("§4: GNNML3 support M ⊙ A², M = A + I", "(A + I) ⊙ A²"),
    ("… read out: 𝟏ᵀ (M ⊙ A²) 𝟏", "𝟏ᵀ ((A + I) ⊙ A²) 𝟏"),
)


def _code(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def classify_table(folder: Path) -> str:
    """``matlang classify`` on every sentence of :data:`PAPER_SENTENCES` (``folder`` unused:
    the analysis is exact and needs no result file)."""
    import matlang

    rows = [
        "| paper | sentence | fragment | WL | witness (values) | normal form |",
        "|---|---|---|---|---|---|",
    ]
    for where, sentence in PAPER_SENTENCES:
        j = matlang.classify(sentence).to_json()
        frag = j["fragment"]
        if j["syntactic_fragment"] != frag:
            frag += f" (written {j['syntactic_fragment']})"
        w = j["witness"]
        witness = "—"
        if w:
            g, h = (_code(str(p)) for p in w["pair"])
            witness = f"{w['level']}: {g} / {h} ({w['values'][0]} vs {w['values'][1]})"
        normal = "(unchanged)" if j["normalized"] == j["sentence"] else _code(j["normalized"])
        rows.append(f"| {where} | {_code(sentence)} | {frag} | {j['wl']} | {witness} | {normal} |")
    return "\n".join(rows) + "\n"


RENDERERS["classify-table"] = classify_table
