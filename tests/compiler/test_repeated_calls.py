"""No recomputation on the hot path: a module called again on the same PyG ``Data``/``Batch``
(same tensors, unchanged) reuses its validation and graph constants (the constant stage runs
once), an in-place change or new layout tensors recompute, and on CUDA a repeated call copies
nothing to the host."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from matlang import parse_program
from matlang.compiler.api import compile
from matlang.graphs import named
from matlang.runtime.batch import Batch, as_batch
from tests.compiler.test_compile_vs_dense import assert_close, reference
from tests.compiler.test_torch_constants import random_graphs

NODE_SENTENCE = "input h; relu(A h) ⊙ ((A ⊙ A²) h)"


def pyg_batch(graphs: list[Any], device: str = "cpu", d: int = 3) -> Any:
    """A PyG ``Batch`` of ``graphs`` (a duck-typed one where PyG is not installed)."""
    b = Batch.from_graphs(graphs)
    x = torch.randn(b.num_nodes, d, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    fields = dict(edge_index=b.edge_index.clone(), batch=b.batch.clone(), ptr=b.ptr.clone(),
                  x=x, num_nodes=b.num_nodes)
    fields = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in fields.items()}
    try:
        from torch_geometric.data import Batch as PygBatch
        from torch_geometric.data import Data
    except ImportError:
        return SimpleNamespace(**fields, num_graphs=b.num_graphs, edge_weight=None)
    data = Data(**{k: v for k, v in fields.items() if k != "num_nodes"})
    out = PygBatch.from_data_list([data])  # a real PyG Batch, then given this layout
    out.edge_index, out.batch, out.ptr, out.x = (
        fields["edge_index"], fields["batch"], fields["ptr"], fields["x"],
    )
    out._num_graphs = b.num_graphs
    return out


def _counting_validation(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import matlang.runtime.batch as batch_module

    calls: list[int] = []
    original = batch_module.check

    def counted(b: Batch, *args: Any) -> None:
        calls.append(1)
        original(b, *args)

    monkeypatch.setattr(batch_module, "check", counted)
    return calls


@pytest.mark.parametrize("constants", ["graphblas", "torch"])
def test_repeated_pyg_calls_compute_constants_and_validate_once(
    constants: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    graphs = random_graphs(5)
    data = pyg_batch(graphs)
    checks = _counting_validation(monkeypatch)
    model = compile(NODE_SENTENCE, dtype=torch.float64, constants=constants)
    want = reference(parse_program(NODE_SENTENCE).sentences[0].expr, graphs,
                     {"h": data.x[:, 0].numpy()})
    for _ in range(4):
        out = model(data)
        assert_close(out[:, 0], want)
    assert model.stage_runs == {constants: 1}
    assert len(checks) == 1
    # the batch given again as a new project Batch over the same tensors: the same memo
    again = as_batch(data, validate=False)
    model(Batch(again.edge_index, again.batch, again.ptr, data.x))
    assert model.stage_runs == {constants: 1}


def test_an_in_place_change_or_new_layout_recomputes() -> None:
    graphs = [named("petersen"), named("K4")]
    data = pyg_batch(graphs)
    model = compile("(A ⊙ A²) 𝟏", dtype=torch.float64)
    first = model(data).clone()
    model(data)
    assert model.stage_runs == {"graphblas": 1}
    # relabel petersen's nodes 0 ↔ 1 in place: another graph, the same tensor object
    ei = data.edge_index
    swapped = ei.clone()
    swapped[ei == 0], swapped[ei == 1] = 1, 0
    order = torch.argsort(swapped[0] * 100 + swapped[1])
    ei.copy_(swapped[:, order])
    out = model(data)
    assert model.stage_runs == {"graphblas": 2}
    assert torch.equal(out[[1, 0]], first[[0, 1]]) and torch.equal(out[2:], first[2:])
    # a new ptr tensor (a loader's new batch) with the same values: computed for it once
    data.ptr = data.ptr.clone()
    model(data)
    model(data)
    assert model.stage_runs == {"graphblas": 3}


def test_layout_memo_reads_no_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second call does not look at the layout again (pyg_view copies it to numpy)."""
    import matlang.runtime.pyg as pyg_module

    data = pyg_batch(random_graphs(2))
    as_batch(data)
    calls: list[int] = []
    original = pyg_module.pyg_view

    def counted(obj: Any, *args: Any) -> Any:
        calls.append(1)
        return original(obj, *args)

    monkeypatch.setattr(pyg_module, "pyg_view", counted)
    first = as_batch(data)
    second = as_batch(data)
    assert calls == []
    assert first.batch is second.batch and first.ptr is second.ptr
    data.batch = data.batch.clone()  # a new tensor: looked at again
    as_batch(data)
    assert calls == [1]


def test_bad_layout_still_refused_after_a_good_call() -> None:
    from matlang.errors import GraphError

    data = pyg_batch([named("K4")])
    as_batch(data)
    data.ptr = torch.tensor([0, 5])
    with pytest.raises(GraphError, match="ptr"):
        as_batch(data)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("sentence", [NODE_SENTENCE, "input h; relu(A h) ⊙ (A² h)"])
def test_cuda_repeated_call_copies_nothing_to_the_host(sentence: str) -> None:
    """Second and later calls on the same PyG batch on a GPU: no device synchronisation at all
    (torch's sync debug mode raises on any device→host copy), forward and backward."""
    graphs = [*random_graphs(3), *random_graphs(4)]
    data = pyg_batch(graphs, "cuda", d=8)
    model = compile(sentence, dtype=torch.float64, nonfinite="keep").cuda()
    data.x.requires_grad_(True)
    want = model(data).detach().cpu()
    assert model.stage_runs == {"torch": 1}
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            out = model(data)
            out.sum().backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert model.stage_runs == {"torch": 1}
    torch.testing.assert_close(out.detach().cpu(), want)
    cpu = compile(sentence, dtype=torch.float64, constants="graphblas")
    b = Batch.from_graphs(graphs)
    np.testing.assert_allclose(
        cpu(b, inputs={"h": data.x.detach().cpu()}).detach().numpy(), want.numpy(), rtol=1e-12
    )


def test_layer_called_again_computes_its_supports_once() -> None:
    """SentenceConv on the same (x, edge_index, batch): the support stage runs once (the
    batch vector given again is recognised by identity, no value read); a new batch vector
    tensor is a new batch, an in-place change of it too."""
    from matlang.nn import SentenceConv

    data = pyg_batch(random_graphs(6))
    conv = SentenceConv(3, 4, ["I", "A ⊙ A²"]).double()
    before = conv.graph_constants_computed()
    first = conv(data.x, data.edge_index, data.batch)
    for _ in range(3):
        torch.testing.assert_close(conv(data.x, data.edge_index, data.batch), first)
    assert conv.graph_constants_computed() == before + 1
    vec = data.batch.clone()
    torch.testing.assert_close(conv(data.x, data.edge_index, vec), first)
    conv(data.x, data.edge_index, vec)
    assert conv.graph_constants_computed() == before + 2
    vec.add_(0)  # an in-place write (same values): the version counter moves
    conv(data.x, data.edge_index, vec)
    assert conv.graph_constants_computed() == before + 3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_layer_called_again_copies_nothing_to_the_host() -> None:
    from matlang.nn import SentenceConv

    data = pyg_batch(random_graphs(6), "cuda", d=8)
    conv = SentenceConv(8, 8, ["I", "A", "A ⊙ A²"]).double().cuda()
    cpu = SentenceConv(8, 8, ["I", "A", "A ⊙ A²"]).double()
    cpu.load_state_dict({k: v.cpu() for k, v in conv.state_dict().items()})
    x = data.x.requires_grad_(True)
    first = conv(x, data.edge_index, data.batch)
    first.sum().backward()  # the first call, backward included, may read the batch on the host
    want = first.detach()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            out = conv(x, data.edge_index, data.batch)
            out.sum().backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.testing.assert_close(out.detach(), want)
    got = cpu(x.detach().cpu(), data.edge_index.cpu(), data.batch.cpu())
    torch.testing.assert_close(want.cpu(), got.detach(), rtol=1e-12, atol=1e-12)


def test_layout_memo_on_a_pyg_data_follows_its_attributes() -> None:
    """A PyG Data read through its attribute dict: the same object gives the same Batch (same
    x too), a new x a new Batch over the same layout, more nodes (num_nodes, or a taller x when
    PyG infers num_nodes from it) a new layout, and edge_attr still warns."""
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data

    g = Batch.from_graphs([named("K4")])
    data = Data(edge_index=g.edge_index.clone(), x=torch.ones(4, 2))
    first = as_batch(data)
    assert as_batch(data) is first
    data.x = torch.zeros(4, 2)
    second = as_batch(data)
    assert second is not first and second.ptr is first.ptr and second.x is data.x
    data.x = torch.zeros(6, 2)  # two isolated nodes more (PyG infers num_nodes from x)
    third = as_batch(data)
    assert third.num_nodes == 6 and third.ptr is not first.ptr
    data.num_nodes = 7
    with pytest.raises(Exception, match="x of shape"):
        as_batch(data)
    data.x = torch.zeros(7, 2)
    assert as_batch(data).num_nodes == 7
    data.edge_attr = torch.ones(g.num_edges, 3)
    with pytest.warns(UserWarning, match="edge_attr is ignored"):
        as_batch(data)


def test_laying_out_a_batch_of_known_size_reads_no_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyg_layout copies what it reads to numpy; with the node count given, the (2, E) edges
    are not among it (on a GPU: no copy of the edges to the host to lay a batch out)."""
    import matlang.pyg_rule as graphs

    copied: list[tuple[int, ...]] = []
    original = graphs._numpy

    def recording(v: Any) -> Any:
        out = original(v)
        copied.append(out.shape)
        return out

    monkeypatch.setattr(graphs, "_numpy", recording)
    b = Batch.from_graphs(random_graphs(8))
    data = SimpleNamespace(edge_index=b.edge_index.clone(), batch=b.batch.clone(), x=None,
                           num_nodes=b.num_nodes, edge_weight=None)
    got = as_batch(data)
    assert torch.equal(got.ptr, b.ptr) and b.num_edges > 0
    assert (2, b.num_edges) not in copied and (b.num_nodes,) in copied  # the batch vector is
