"""Compiled modules equal the exact dense evaluator (float64, relative 1e-9): every sentence of
the front end's golden table and a list of our own covering every construct, on the paper's
graphs and random graphs with isolated nodes, in one batch of mixed sizes, on both backends."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from matlang import ast, parse_program
from matlang.compiler.api import compile
from matlang.compiler.support import FullMaskError
from matlang.errors import EvaluationError, MatlangError
from matlang.evaluator import evaluate_graph
from matlang.graphs import Graph, from_adjacency, named
from matlang.runtime.batch import Batch
from tests.fixtures import GRAPHS, VALID, backends

P = pytest.param


def reference(
    e: ast.Expr,
    graphs: list[Graph],
    features: dict[str, np.ndarray],
    order: tuple[str, ...] = (),
) -> np.ndarray:
    """The dense evaluator's values, laid out like the module's output."""
    offsets = np.cumsum([0] + [g.num_nodes for g in graphs])
    vals = []
    for i, g in enumerate(graphs):
        local = {k: v[offsets[i] : offsets[i + 1]] for k, v in features.items()}
        vals.append(evaluate_graph(e, g, inputs=local, input_order=order or None))
    if e.shape.is_scalar:
        return np.array([float(v) for v in vals])
    if e.shape.is_vector:
        return np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1) for v in vals])
    out = np.zeros((offsets[-1], offsets[-1]))
    for i, v in enumerate(vals):
        out[offsets[i] : offsets[i + 1], offsets[i] : offsets[i + 1]] = np.asarray(v, float)
    return out


def assert_close(got: torch.Tensor, want: np.ndarray, rtol: float = 1e-9) -> None:
    g = (got.to_dense() if got.is_sparse else got).detach().to(torch.float64).numpy()
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol * scale)


def features(names: tuple[str, ...], n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.integers(-3, 4, n).astype(np.float64) for name in names}


def check_sentence(
    text: str, backend: str, graphs: list[Graph] = GRAPHS, *, dense: bool = False
) -> torch.nn.Module:
    program = parse_program(text)
    e = program.sentences[0].expr
    model = compile(text, dtype=torch.float64, backend=backend, dense=dense)
    feats = features(program.inputs, sum(g.num_nodes for g in graphs))
    got = model(Batch.from_graphs(graphs), inputs={k: torch.tensor(v) for k, v in feats.items()})
    assert_close(got, reference(e, graphs, feats, program.inputs))
    return model


# --------------------------------------------------------------------------- golden table

#: golden sentences whose value is a matrix with a full support: no sparse lowering
FULL_IN_GOLDEN = {"outer-product", "user-function-two-args"}
#: golden sentences that divide by zero on every graph (tr(A) = 0)
DIVIDE_BY_ZERO = {"division-by-scalar-expression"}


@pytest.mark.parametrize("backend", backends())
def test_golden_table(backend: str) -> None:
    checked = 0
    for p in VALID:
        text, ident = p.values[0], p.id
        if ident in FULL_IN_GOLDEN:
            with pytest.raises(FullMaskError):
                compile(text, backend=backend)
            check_sentence(text, backend, dense=True)
            continue
        if ident in DIVIDE_BY_ZERO:
            model = compile(text, dtype=torch.float64, backend=backend)
            with pytest.raises(EvaluationError, match="division by zero"):
                model(GRAPHS)
            with pytest.raises(EvaluationError):
                evaluate_graph(parse_program(text).sentences[0].expr, GRAPHS[0])
            continue
        check_sentence(text, backend)
        checked += 1
    assert checked >= len(VALID) - len(FULL_IN_GOLDEN) - len(DIVIDE_BY_ZERO) >= 90


# --------------------------------------------------------------------------- our own list

OWN = [
    # graph level: the paper's counting sentences
    "𝟏ᵀ A 𝟏",
    "tr(A²)",
    "tr(A³) / 6",
    "tr(A⁴)",
    "tr(A⁵)",
    "(tr(A⁴) + tr(A²) - 2 𝟏ᵀ A² 𝟏) / 8",
    "𝟏ᵀ (A ⊙ A²)² 𝟏",
    "𝟏ᵀ ((A ⊙ A²)² 𝟏 ⊙ (A ⊙ A²)² 𝟏)",
    "1/2 * ones' (A^3 .* diag(deg - 2 ones)) ones",
    "𝟏ᵀ A diag(exp(-A² 𝟏)) A 𝟏",
    "𝟏ᵀ binom(A 𝟏, 3)",
    # traces: diagonals without the matrix
    "tr(A ⊙ A)",
    "tr(diag(A 𝟏) A²)",
    "tr(A (A ⊙ A²))",
    "tr((A ⊙ A²)²)",
    "tr((diag(A 𝟏) A ⊙ A²)²)",
    "tr(A 𝟏 𝟏ᵀ A)",
    "tr(𝟏 𝟏ᵀ)",
    "tr(exp(A))",
    "tr(relu(A² - A))",
    "tr(A² diag(A 𝟏) A⁴)",
    # scalar arithmetic
    "(𝟏ᵀ A 𝟏)² - tr(A²)",
    "sigmoid(tr(A³)) ⊙ 2",
    "tr(A²) / (𝟏ᵀ 𝟏)",
    "-tr(A³)ᵀ + 2³",
    # masked materialisation under ⊙ and f
    "𝟏ᵀ (A³ ⊙ A) 𝟏",
    "𝟏ᵀ (A² ⊙ A²) 𝟏",
    "𝟏ᵀ (A ⊙ (A² - 2 A)) A 𝟏",
    "𝟏ᵀ (L ⊙ L) 𝟏",
    "deg' L deg",
    "𝟏ᵀ (A ⊙ (A 𝟏 𝟏ᵀ)) 𝟏",
    "𝟏ᵀ (A² ⊙ 𝟏 (A 𝟏)ᵀ) 𝟏",
    "𝟏ᵀ A⁰ 𝟏",
    "𝟏ᵀ (I - A)³ 𝟏",
    "let g(x, y) = x*y; 𝟏ᵀ g(A, A²) 𝟏",
    "𝟏ᵀ max(A, A²) 𝟏",
    "𝟏ᵀ min(A², 2 A) 𝟏",
    "𝟏ᵀ (A ⊙ A²)ᵀ (diag(A 𝟏) A) 𝟏",
    "𝟏ᵀ (diag(A 𝟏) A ⊙ A²)ᵀ 𝟏",
    "𝟏ᵀ (cos(A) ⊙ A²) 𝟏",
    # matrices on the empty mask (A ⊙ I = 0 without self-loops) under tr or ᵀ
    "tr((I + I) (A + A))",
    "𝟏ᵀ (I ⊙ Aᵀ) 𝟏",
    "tr((A ⊙ I)²)",
    "tr(A relu(I))",
    "tr(A (A ⊙ I))",
    "tr(A² (A ⊙ I)ᵀ)",
    "(A ⊙ I)ᵀ 𝟏",
    # node level
    "A 𝟏",
    "A² 𝟏 - A 𝟏",
    "(A ⊙ A²) 𝟏",
    "(A³ ⊙ I) 𝟏",
    "diag(A 𝟏) A 𝟏 / 2",
    "exp(-A² 𝟏)",
    "(A 𝟏 𝟏ᵀ) A 𝟏",
    "𝟏ᵀ A (A ⊙ A²)",
    "(𝟏ᵀ A³)ᵀ ⊙ A 𝟏",
    "relu(A² - A) 𝟏",
    "tanh(A) A 𝟏",
    "(A ⊙ A²)ᵀ A 𝟏",
    "(𝟏ᵀ A 𝟏) A 𝟏",
    "input h; A h + 2 h",
    "input h; (A ⊙ A²) h ⊙ h",
    "input h, w; h ⊙ A w - diag(w) A h",
    "input h; hᵀ (A ⊙ A²) h",
    "input h; (h hᵀ ⊙ A) 𝟏",
    # matrix level: the value on its mask
    "A ⊙ A²",
    "A²",
    "relu(A - A²) + I",
    "(A ⊙ A²)²",
    "diag(A 𝟏) A",
    "A ⊙ (A 𝟏 𝟏ᵀ)",
    "(A (A ⊙ A²))ᵀ",
]


def test_own_list_covers_every_construct() -> None:
    assert len(OWN) >= 40
    kinds: set[str] = set()
    for text in OWN:
        for node in parse_program(text).sentences[0].expr.walk():
            kinds.add(type(node).__name__)
    assert kinds >= {
        "Input", "Ones", "Number", "Mul", "Hadamard", "Add", "Sub", "Neg", "Div",
        "Transpose", "Power", "Diag", "Trace", "Apply",
    }  # fmt: skip


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("text", OWN)
def test_own_sentences(text: str, backend: str) -> None:
    check_sentence(text, backend)


DENSE_ONLY = [
    "exp(A) 𝟏",
    "𝟏ᵀ cos(A)² 𝟏",
    "𝟏 𝟏ᵀ",
    "let g(x, y) = x*y + 1; g(A, A²)",
    "tr(exp(A) A exp(A))",
    "sigmoid(A 𝟏 𝟏ᵀ A) 𝟏",
]


@pytest.mark.parametrize("text", DENSE_ONLY)
def test_full_masks_run_densely_on_request(text: str) -> None:
    with pytest.raises(FullMaskError):
        compile(text)
    model = check_sentence(text, "torch", dense=True)
    assert model.plan.steps[0].op == "full" or "full" in [s.op for s in model.plan.steps]


# --------------------------------------------------------------------------- outputs and inputs


def test_several_sentences_one_channel_each() -> None:
    text = "triangles: tr(A³) / 6; c4: (tr(A⁴) + tr(A²) - 2 𝟏ᵀ A² 𝟏) / 8; edges: 𝟏ᵀ A 𝟏 / 2"
    model = compile(text, dtype=torch.float64)
    out = model(GRAPHS)
    assert out.shape == (len(GRAPHS), 3)
    for k, s in enumerate(parse_program(text).sentences):
        assert_close(out[:, k], reference(s.expr, GRAPHS, {}))
    nodes = compile(["A 𝟏", "(A ⊙ A²) 𝟏"], dtype=torch.float64)(GRAPHS)
    assert nodes.shape == (sum(g.num_nodes for g in GRAPHS), 2)
    assert_close(nodes[:, 1], reference(parse_program("(A ⊙ A²) 𝟏").sentences[0].expr,
                                        GRAPHS, {}))


def test_inputs_from_node_features_in_declaration_order() -> None:
    rng = np.random.default_rng(3)
    graphs = [
        from_adjacency(g.adjacency, name=g.name, x=rng.integers(-2, 3, (g.num_nodes, 2)))
        for g in GRAPHS[:4]
    ]
    text = "input w, h; h ⊙ A w - 2 diag(w) A h"
    program = parse_program(text)
    model = compile(text, dtype=torch.float64)
    got = model(graphs)
    want = np.concatenate([
        evaluate_graph(program.sentences[0].expr, g, input_order=program.inputs) for g in graphs
    ]).astype(np.float64)
    assert_close(got, want)


def test_pyg_data_as_it_is() -> None:
    graphs = GRAPHS[:5]
    b = Batch.from_graphs(graphs)
    data = SimpleNamespace(edge_index=b.edge_index, batch=b.batch, num_nodes=b.num_nodes, x=None)
    model = compile("𝟏ᵀ (A ⊙ A²)² 𝟏 + tr(A³)", dtype=torch.float64)
    assert torch.equal(model(data), model(graphs))
    single = SimpleNamespace(edge_index=torch.as_tensor(named("K4").edge_index), num_nodes=4)
    assert model(single).tolist() == [144 + 24]


def test_float32_by_default() -> None:
    model = compile("tr(A³) / 6 + 𝟏ᵀ (A ⊙ A²) 𝟏")
    out = model(GRAPHS)
    assert out.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in model.parameters())
    e = parse_program("tr(A³) / 6 + 𝟏ᵀ (A ⊙ A²) 𝟏").sentences[0].expr
    assert_close(out, reference(e, GRAPHS, {}), rtol=1e-6)


def test_matrix_sentences_live_on_their_mask() -> None:
    model = compile("A ⊙ A²", dtype=torch.float64)
    b = Batch.from_graphs(GRAPHS)
    [(index, values)] = model.edge_values(b)
    assert index.shape[1] == b.num_edges  # the mask is E, not the 2-hop set
    dense = model(b)
    assert dense.is_sparse and dense.shape == (b.num_nodes, b.num_nodes)


def test_weighted_graphs() -> None:
    a = np.array([[0, 2.0, 0.5], [2.0, 0, 1.0], [0.5, 1.0, 0]])
    g = from_adjacency(a, allow_weights=True, name="weighted")
    for text in ["tr(A³)", "𝟏ᵀ (A ⊙ A²) A 𝟏", "(A ⊙ A²) 𝟏 - 3 A 𝟏"]:
        check_sentence(text, "torch", [g, named("K4")])


@pytest.mark.parametrize("text", ["𝟏ᵀ (A ⊙ A²)² 𝟏 - tr(A³)", "(A² - A ⊙ A²) 𝟏 + 2 𝟏", "A + A ⊙ A²"])
def test_all_weights_start_at_the_exact_solution(text: str) -> None:
    model = compile(text, dtype=torch.float64, weights="all")
    assert {n.split(".")[-1][0] for n, _ in model.named_parameters()} >= {"a", "w"}
    e = parse_program(text).sentences[0].expr
    assert_close(model(GRAPHS), reference(e, GRAPHS, {}))


def test_materialise_gives_a_matrix_on_its_mask() -> None:
    from matlang.compiler.api import materialise

    b = Batch.from_graphs(GRAPHS)
    index, values = materialise("A ⊙ A²", b)
    assert index.shape == (2, b.num_edges) and values.dtype == torch.float64
    dense = torch.zeros(b.num_nodes, b.num_nodes, dtype=torch.float64)
    dense[index[0], index[1]] = values
    e = parse_program("A ⊙ A²").sentences[0].expr
    assert_close(dense, reference(e, GRAPHS, {}))
    with pytest.raises(MatlangError, match="matrix sentence"):
        materialise("A 𝟏", b)


@pytest.mark.parametrize(
    "text",
    ["A", "I", "A ⊙ A²", "(A + I) ⊙ A²", "A³ ⊙ I", "A²", "(A diag(A 𝟏))ᵀ", "diag(A 𝟏)", "A - I"],
)
@pytest.mark.parametrize("order", ["coalesced", "shuffled"])
def test_output_row_major_is_what_materialise_gives(text: str, order: str) -> None:
    """A layer builds its CSR supports without a sort or a check where the module says its
    output mask is row-major (``output_row_major``): the index must then be strictly
    increasing in ``row·n + col``, whatever the order of the input's edges."""
    from matlang.compiler.api import materialise

    b = Batch.from_graphs(GRAPHS)
    if order == "shuffled":
        perm = torch.randperm(b.num_edges, generator=torch.Generator().manual_seed(3))
        b = Batch.from_edge_index(b.edge_index[:, perm], b.batch, num_nodes=b.num_nodes)
    model = compile(text, dtype=torch.float64)
    index, values = materialise(model, b)
    key = index[0] * b.num_nodes + index[1]
    claims = model.output_row_major()
    assert len(claims) == 1
    if claims[0]:
        assert bool((key[1:] > key[:-1]).all())
    dense = torch.zeros(b.num_nodes, b.num_nodes, dtype=torch.float64)
    dense[index[0], index[1]] = values
    e = parse_program(text).sentences[0].expr
    assert_close(dense, reference(e, GRAPHS, {}))
    if text in ("A", "A ⊙ A²", "A²"):
        assert claims[0]  # the masks a layer's supports mostly have: no sort on the hot path
