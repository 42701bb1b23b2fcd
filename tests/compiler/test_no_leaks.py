"""Nothing a layer or a compiled module remembers about a batch outlives the batch's tensors.

What a batch remembers (validation, graph constants, a layer's supports) lives on its
``edge_index`` tensor and dies with it. That holds only if nothing remembered refers back to
that tensor through a reference the garbage collector cannot follow: a torch view of it kept
inside a sparse tensor (the CSR's column indices were a row of ``edge_index``) holds its base
from C++, the cycle is never collected, and a stream of new batches leaked every batch's
constants (1.4 MB a batch of 128 graphs of 25 nodes, found this way). Each case drops every
reference a user holds, collects, and checks that ``edge_index`` is gone."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
import torch

import matlang
from matlang.runtime.generators import erdos_renyi
from matlang.runtime.pyg import _LAYOUT_ATTRIBUTE

pyg_data = pytest.importorskip("torch_geometric.data")


def _data(seed: int, *, unsorted: bool, n: int = 12) -> Any:
    g = erdos_renyi(n, 0.35, seed=seed)
    ei = torch.as_tensor(g.edge_index, dtype=torch.int64)
    if unsorted:  # PyG's cat([e, e.flip(0)], 1): valid, not row-major
        half = ei[:, ei[0] < ei[1]]
        ei = torch.cat([half, half.flip(0)], 1).contiguous()
    return pyg_data.Data(x=torch.randn(n, 4), edge_index=ei, num_nodes=n)


def _dies(call: Callable[[Any], Any], make: Callable[[], Any]) -> bool:
    """Whether the batch's ``edge_index`` is collected once the caller lets go of the batch."""

    def run() -> weakref.ref[torch.Tensor]:
        batch = make()
        call(batch)
        return weakref.ref(batch.edge_index)

    ref = run()
    gc.collect()
    return ref() is None


def _batch(seeds: list[int], unsorted: bool) -> Callable[[], Any]:
    return lambda: pyg_data.Batch.from_data_list([_data(s, unsorted=unsorted) for s in seeds])


LAYERS: dict[str, Callable[[], Any]] = {
    "supports": lambda: matlang.nn.SentenceConv(4, 3, ["I", "A", "A ⊙ A²", "diag(A 𝟏) A"]),
    "normalized": lambda: matlang.nn.SentenceConv(4, 3, ["A", "A ⊙ A²"], normalize="max_row_sum"),
    "wide input": lambda: matlang.nn.SentenceConv(4, 2, ["I", "A ⊙ A²"]),  # x W first
    "channel and node sentences": lambda: matlang.nn.SentenceConv(
        4, 3, ["A", "input h; relu(A h) ⊙ (A² h)", "(A³ ⊙ I) 𝟏"]
    ),
}


@pytest.mark.parametrize("layer", list(LAYERS))
@pytest.mark.parametrize("unsorted", [False, True], ids=["coalesced", "unsorted"])
@pytest.mark.parametrize("seen", [False, True], ids=["new", "seen"])
def test_a_sentence_layer_leaves_nothing_of_a_batch(layer: str, unsorted: bool, seen: bool) -> None:
    conv = LAYERS[layer]()

    def call(b: Any) -> None:
        x = b.x.clone().requires_grad_(True)
        conv(x, b.edge_index, b.batch).sum().backward()

    if seen:  # the same graphs once before: the second batch is assembled from the cache
        call(_batch([1, 2, 3], unsorted)())
    assert _dies(call, _batch([1, 2, 3], unsorted))


@pytest.mark.parametrize("unsorted", [False, True], ids=["coalesced", "unsorted"])
def test_an_int32_edge_index_leaves_nothing_either(unsorted: bool) -> None:
    """An int32 ``edge_index``: the memo lives on its int64 copy (``Batch.edge_index``), the
    tensor a support's columns may view; the user's tensor dies all the same."""
    conv = LAYERS["supports"]()

    def make() -> Any:
        b = _batch([4, 5], unsorted)()
        b.edge_index = b.edge_index.to(torch.int32)
        return b

    copies: list[weakref.ref[torch.Tensor]] = []

    def call(b: Any) -> None:
        conv(b.x, b.edge_index, b.batch).sum().backward()
        layout = getattr(b.edge_index, _LAYOUT_ATTRIBUTE)  # read_pyg's int64 copy
        copies.append(weakref.ref(layout[1][0]))

    assert _dies(call, make)
    assert copies and copies[0]() is None  # the copy, which holds the memo, is gone too


@pytest.mark.parametrize("unsorted", [False, True], ids=["coalesced", "unsorted"])
def test_a_compiled_module_leaves_nothing_of_a_graph(unsorted: bool) -> None:
    for text in ("tr(A³) / 6", "(A ⊙ A²)² 𝟏", "diag(A 𝟏) A 𝟏"):
        model = matlang.compile(text)
        assert _dies(model, lambda: _data(7, unsorted=unsorted)), text


def test_a_sentence_model_leaves_nothing_of_its_batches() -> None:
    model = matlang.nn.SentenceGNN(4, 2, ["I", "A", "A ⊙ A²"], hidden=8, layers=2)
    for seen in (False, True):
        assert _dies(lambda b: model(b).sum().backward(), _batch([4, 5], False)), seen


def test_graph_features_leave_nothing_of_a_graph() -> None:
    from matlang.transforms import SentenceFeatures

    features = SentenceFeatures(["(A³ ⊙ I) 𝟏", "𝟏ᵀ (A ⊙ A²) 𝟏"])
    assert _dies(features, lambda: _data(9, unsorted=False))
