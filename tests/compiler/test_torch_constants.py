"""The torch constant stage equals the GraphBLAS stage and the dense evaluator: every sentence of
the compile tables, register by register (integers exactly) and through the compiled module, on
batches of random graphs with an edgeless graph among them; integers past float64's exact range
stay exact; the stage is chosen by the batch's device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from matlang import parse_program
from matlang.compiler.api import compile
from matlang.compiler.constants import ConstantStage, graphs_of
from matlang.compiler.lower import lower
from matlang.compiler.support import FullMaskError
from matlang.compiler.torch_constants import TorchConstantStage, torch_graphs_of
from matlang.errors import EvaluationError, MatlangError
from matlang.graphs import Graph, from_adjacency, named
from matlang.runtime.batch import Batch
from matlang.runtime.generators import erdos_renyi
from matlang.runtime.graphblas import Mask
from matlang.runtime.masks import prepared_edges
from matlang.runtime.torch_kernels import TorchMask
from tests.compiler.test_backends import SENTENCES as BACKEND_SENTENCES
from tests.compiler.test_compile_vs_dense import OWN, assert_close, features, reference
from tests.compiler.test_constant_cache import SENTENCES as CACHE_SENTENCES
from tests.compiler.test_constant_cache import WITH_INPUT
from tests.compiler.test_constants import INTEGRAL
from tests.compiler.test_fast_paths import SENTENCES as FAST_SENTENCES
from tests.fixtures import VALID


def _lowerable(text: str) -> bool:
    try:
        program = parse_program(text)
        lower(program)
    except (MatlangError, FullMaskError):
        return False
    return len(program.sentences) == 1


#: every sentence of the compile tables (each once), golden table included where it lowers
TABLE = list(
    dict.fromkeys(
        [*OWN, *INTEGRAL, *BACKEND_SENTENCES, *FAST_SENTENCES, *CACHE_SENTENCES, *WITH_INPUT]
        + [p.values[0] for p in VALID if p.id != "division-by-scalar-expression"]
    )
)
TABLE = [t for t in TABLE if _lowerable(t)]

#: The default run compares every SAMPLE_EVERY-th sentence of :data:`TABLE` (a spread over the
#: tables it is made of: a few seconds); the whole table runs under ``-m slow`` (also in .ci/run's
#: pass with the sparse extra) and on a GPU (``-k cuda``).
SAMPLE_EVERY = 8


def sampled(table: list[str]) -> list[Any]:
    """``table`` with all but every SAMPLE_EVERY-th sentence marked ``slow``."""
    slow = pytest.mark.slow
    return [
        t if i % SAMPLE_EVERY == 0 else pytest.param(t, marks=slow) for i, t in enumerate(table)
    ]


def random_graphs(seed: int) -> list[Graph]:
    """Random graphs of mixed sizes, an edgeless graph among them (and a single node)."""
    rng = np.random.default_rng(seed)
    gs = [erdos_renyi(int(rng.integers(4, 14)), float(rng.uniform(0.2, 0.7)), seed=seed + i)
          for i in range(4)]
    gs.insert(2, from_adjacency(np.zeros((4, 4), dtype=np.int64), name="edgeless"))
    gs.append(from_adjacency(np.zeros((1, 1), dtype=np.int64), name="K1"))
    return [*gs, named("petersen")]


GRAPHS = random_graphs(11)


def _plain(v: Any, size: int) -> np.ndarray:
    """A stage value (numpy or torch, maybe one value for every entry) as a 1-D array."""
    if isinstance(v, torch.Tensor):
        v = v.cpu().numpy()
    v = np.asarray(v)
    return np.broadcast_to(v, (size,)) if v.ndim == 0 else v


def _stages_agree(text: str, batch: Batch) -> int:
    """Every register the two stages export is the same (masks entry for entry, integral
    values exactly, float values to 1e-12); the number of registers compared."""
    plan = lower(parse_program(text))
    edges, weight = prepared_edges(batch)
    try:
        gb_vals, gb_sizes = ConstantStage(plan).run(graphs_of(batch, edges, weight))
    except EvaluationError as e:  # the same error, word for word (division by 0 on a graph)
        with pytest.raises(EvaluationError) as got:
            TorchConstantStage(plan).run(torch_graphs_of(batch, edges, weight))
        assert str(got.value) == str(e)
        return 0
    t_vals, t_sizes = TorchConstantStage(plan).run(torch_graphs_of(batch, edges, weight))
    assert set(gb_vals) == set(t_vals), text
    assert gb_sizes == t_sizes, text
    for k, want in gb_vals.items():
        got = t_vals[k]
        if isinstance(want, Mask):
            assert isinstance(got, TorchMask)
            assert np.array_equal(want.rows, got.rows.numpy()), (text, k)
            assert np.array_equal(want.cols, got.cols.numpy()), (text, k)
            continue
        size = gb_sizes[k]
        w, g = _plain(want, size), _plain(got, size)
        if w.dtype.kind in "iu" and g.dtype.kind in "iu":
            assert np.array_equal(w, g), (text, k, w, g)
        else:
            w = w.astype(np.float64)
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=1e-12,
                                       atol=1e-12 * max(1.0, float(np.abs(w).max(initial=0))))
    return len(gb_vals)


@pytest.mark.parametrize("text", sampled(TABLE))
def test_torch_stage_equals_graphblas_register_by_register(text: str) -> None:
    _stages_agree(text, Batch.from_graphs(GRAPHS))


@pytest.mark.parametrize("text", sampled(TABLE))
def test_torch_stage_module_equals_graphblas_and_the_dense_evaluator(text: str) -> None:
    program = parse_program(text)
    batch = Batch.from_graphs(GRAPHS)
    feats = features(program.inputs, batch.num_nodes, seed=3)
    inputs = {k: torch.tensor(v) for k, v in feats.items()}
    outs = {}
    try:
        compile(text, dtype=torch.float64, constants="graphblas")(batch, inputs=inputs)
    except EvaluationError as e:
        with pytest.raises(EvaluationError) as got:
            compile(text, dtype=torch.float64, constants="torch")(batch, inputs=inputs)
        assert str(got.value) == str(e)
        return
    for where in ("torch", "graphblas"):
        model = compile(text, dtype=torch.float64, constants=where)
        outs[where] = model(batch, inputs=inputs)
        assert model.stage_runs.get(where, 0) <= 1 and set(model.stage_runs) <= {where}
    want = reference(program.sentences[0].expr, GRAPHS, feats, program.inputs)
    assert_close(outs["torch"], want)
    got, ref = outs["torch"], outs["graphblas"]
    if got.is_sparse:
        got, ref = got.to_dense(), ref.to_dense()
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_torch_stage_on_weighted_batches(seed: int) -> None:
    """Integer and fractional weights take the weighted kernels of both stages."""
    rng = np.random.default_rng(seed)
    graphs = []
    for g in random_graphs(seed):
        a = np.asarray(g.adjacency)
        w = np.triu(rng.integers(1, 6, a.shape) * a, 1)
        w = w + w.T
        graphs.append(from_adjacency(w / 2 if seed == 2 else w, name=g.label(), allow_weights=True))
    batch = Batch.from_graphs(graphs)
    compared = sum(_stages_agree(t, batch) for t in INTEGRAL + CACHE_SENTENCES)
    assert compared >= 30


def test_torch_stage_stays_exact_past_float64_integers() -> None:
    """Weights of 2²⁸: entries of A² near 2⁵⁸ are past float64's exact integers (the CSR
    product) but within int64: the torch stage joins their terms in int64, exactly as GraphBLAS;
    past 2⁶² both go to float64 (exact=False)."""
    g = erdos_renyi(12, 0.5, seed=4)
    a = np.asarray(g.adjacency).astype(np.int64)
    rng = np.random.default_rng(0)
    w = np.triu(a * (2**28 + rng.integers(0, 1000, a.shape)), 1)
    w = w + w.T
    batch = Batch.from_graphs([from_adjacency(w, allow_weights=True), g])
    plan = lower(parse_program("A²"))
    edges, weight = prepared_edges(batch)
    (k,) = [o.register for o in plan.outputs]
    got = TorchConstantStage(plan).run(torch_graphs_of(batch, edges, weight))[0][k]
    want = ConstantStage(plan).run(graphs_of(batch, edges, weight))[0][k]
    assert got.dtype == torch.int64 and int(got.abs().max()) > 2**55
    assert np.array_equal(got.numpy(), want)
    _stages_agree("A ⊙ A²", batch)  # past 2⁶²: float64 on both


def test_exact_rationals_are_graphblas_only() -> None:
    with pytest.raises(EvaluationError, match="GraphBLAS only"):
        TorchConstantStage(lower(parse_program("tr(A²) / 3")), exact=True)


def test_auto_picks_the_stage_by_device_and_bad_options_are_named() -> None:
    model = compile("𝟏ᵀ (A ⊙ A²) 𝟏")
    assert model.constants == "auto"
    assert model.constant_stage_for("cpu") == "graphblas"
    assert model.constant_stage_for("cuda:0") == "torch"
    model(GRAPHS)
    assert model.stage_runs == {"graphblas": 1}
    with pytest.raises(MatlangError, match="constants must be one of"):
        compile("tr(A²)", constants="gpu")


def test_division_by_zero_and_nonfinite_are_named_by_graph() -> None:
    batch = Batch.from_graphs([named("petersen"), from_adjacency(np.zeros((3, 3), np.int64),
                                                                 name="bare")])
    with pytest.raises(EvaluationError, match="division by zero on graph bare"):
        compile("tr(A²) / (𝟏ᵀ A 𝟏)", constants="torch")(batch)
    with pytest.raises(EvaluationError, match="on graph bare"):
        compile("𝟏ᵀ log(A 𝟏)", constants="torch")(batch)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("text", TABLE)
def test_cuda_torch_stage_equals_graphblas(text: str) -> None:
    """On a GPU: the auto stage is torch and gives the GraphBLAS values (from the CPU)."""
    program = parse_program(text)
    batch = Batch.from_graphs(GRAPHS)
    feats = features(program.inputs, batch.num_nodes, seed=3)
    inputs = {k: torch.tensor(v) for k, v in feats.items()}
    cpu = compile(text, dtype=torch.float64, constants="graphblas")
    gpu = compile(text, dtype=torch.float64).cuda()
    on_gpu = {k: v.cuda() for k, v in inputs.items()}
    try:
        want = cpu(batch, inputs=inputs)
    except EvaluationError as e:  # division by 0 on the edgeless graph: the same error
        with pytest.raises(EvaluationError) as got_error:
            gpu(batch.to("cuda"), inputs=on_gpu)
        assert str(got_error.value) == str(e)
        return
    got = gpu(batch.to("cuda"), inputs=on_gpu)
    assert gpu.stage_runs.get("torch", 0) <= 1 and "graphblas" not in gpu.stage_runs
    if want.is_sparse:
        got, want = got.to_dense(), want.to_dense()
    torch.testing.assert_close(got.cpu(), want, rtol=1e-12, atol=1e-12)
