"""The shortcuts a new PyG ``Data`` takes give what the general paths give:
fields read from PyG's attribute dict, the batch vector without torch's repeat, validation's row
pointers reused by the stage, and the triangle count's ``L`` taken from the stored edges."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from matlang.errors import GraphError
from matlang.runtime import batch as rb
from matlang.runtime import pyg as rp
from matlang.runtime.batch import as_batch
from matlang.runtime.generators import erdos_renyi
from matlang.runtime.graphblas import Kernels, Mask, _gb

pyg = pytest.importorskip("torch_geometric.data")

from tests.runtime.test_batch import BAD  # noqa: E402


def _edges(n: int, p: float, seed: int) -> torch.Tensor:
    a = erdos_renyi(n, p, seed=seed).adjacency
    return torch.from_numpy(np.stack(np.nonzero(a)).astype(np.int64))


def _same_batch(a: rb.Batch, b: rb.Batch) -> None:
    for x, y in ((a.edge_index, b.edge_index), (a.batch, b.batch), (a.ptr, b.ptr)):
        assert x.dtype == y.dtype and torch.equal(x, y)
    for x, y in ((a.x, b.x), (a.edge_weight, b.edge_weight)):
        assert (x is None) == (y is None) and (x is None or torch.equal(x, y))


class SubData(pyg.Data):  # type: ignore[misc]
    """A subclass: read through PyG's accessors, as any other object."""


def test_a_plain_data_reads_its_attribute_dict() -> None:
    ei = _edges(12, 0.3, 0)
    kw: dict[str, Any] = {"edge_index": ei, "num_nodes": 12, "x": torch.ones(12, 2)}
    kw["edge_weight"] = torch.full((ei.shape[1],), 2.0)
    assert isinstance(rp._plain_fields(pyg.Data(**kw)), rp.GraphFields)
    assert rp._plain_fields(SubData(**kw)) is None
    no_n = {k: v for k, v in kw.items() if k != "num_nodes"}
    assert rp._plain_fields(pyg.Data(**no_n)) is None  # PyG infers it: read as it is
    for other in (SubData(**kw), SimpleNamespace(**kw), pyg.Data(**no_n)):
        _same_batch(as_batch(pyg.Data(**kw)), as_batch(other))


def test_the_batch_vector_of_several_graphs_and_of_one() -> None:
    graphs = [pyg.Data(edge_index=_edges(k, 0.5, k), num_nodes=k) for k in (5, 0, 7, 1)]
    b = pyg.Batch.from_data_list(graphs)
    got = as_batch(b)
    assert got.batch.tolist() == b.batch.tolist() and got.ptr.tolist() == [0, 5, 5, 12, 13]
    one = as_batch(pyg.Data(edge_index=_edges(6, 0.5, 1), num_nodes=6))
    assert one.batch.dtype == torch.int64 and one.batch.tolist() == [0] * 6
    gap = as_batch(pyg.Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=4,
                            batch=torch.tensor([0, 0, 2, 2])))  # fmt: skip
    assert gap.batch.tolist() == [0, 0, 2, 2] and gap.ptr.tolist() == [0, 2, 2, 4]


@pytest.mark.parametrize("name,fields,message", BAD, ids=[b[0] for b in BAD])
def test_a_bad_plain_data_gets_the_same_message(
    name: str, fields: dict[str, Any], message: str
) -> None:
    def make(cls: Any) -> Any:
        return cls(**{k: torch.tensor(v) if isinstance(v, list) else v for k, v in fields.items()})

    messages = []
    for cls in (pyg.Data, SimpleNamespace):
        with pytest.raises(GraphError) as err:
            as_batch(make(cls))
        messages.append(str(err.value))
    assert messages[0] == messages[1] == message


def test_edge_attr_still_warns_on_the_short_path() -> None:
    ei = _edges(6, 0.6, 2)
    with pytest.warns(UserWarning, match="edge_attr is ignored"):
        as_batch(pyg.Data(edge_index=ei, num_nodes=6, edge_attr=torch.ones(ei.shape[1], 3)))


def test_row_pointers_are_those_of_the_validated_edges_only() -> None:
    ei = _edges(20, 0.3, 3)
    b = rb._from_pyg(pyg.Data(edge_index=ei, num_nodes=20))
    assert b.row_pointers() is None  # not validated
    b.validate()
    want = np.concatenate([[0], np.cumsum(np.bincount(ei[0].numpy(), minlength=20))])
    got = b.row_pointers()
    assert got is not None and got.tolist() == want.tolist()
    with torch.no_grad():
        ei[0, 0] = ei[0, 0]  # an in-place write: the remembered pointers are not trusted
    assert b.row_pointers() is None


@pytest.mark.parametrize("seed", range(4))
def test_the_lower_triangle_from_the_stored_edges(seed: int) -> None:
    gb = _gb()
    n = 30
    ei = _edges(n, 0.2, seed).numpy()
    m = Mask.from_sorted_coo(n, ei[0], ei[1])
    assert m.strict_lower().isequal(gb.select.tril(m.pattern, -1).new())
    a = np.zeros((n, n), dtype=np.int64)
    a[ei[0], ei[1]] = 1
    k = Kernels(n, np.array([0, n]), np.zeros(n, dtype=np.int64), exact=False)
    assert k.triangle_trace(Mask.from_sorted_coo(n, ei[0], ei[1])).tolist() == [
        int(np.trace(a @ a @ a))
    ]
