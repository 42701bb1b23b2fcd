"""``matlang.count`` on the torch path (:mod:`compiler.device_counts`): a pattern whose spasm
has treewidth ≤ 2 is counted by its counting sentence on the torch constant stage, where the
batch lives. On the CPU (``constants="torch"``) it equals the host's sparse path for every
connected pattern of 3–6 nodes it takes, per graph and per node; on a GPU, a CUDA batch is
counted there and gives the same numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import matlang
from matlang.compiler.device_counts import count_on_torch, counting_sentence, device_of
from matlang.errors import MatlangError
from matlang.graphs import from_adjacency, named
from tests.matlang.test_count import connected_patterns

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _graphs() -> list:
    rng = np.random.default_rng(4)
    out = [named(n) for n in ("petersen", "rook4x4", "shrikhande")]
    for n, p in ((11, 0.45), (16, 0.25), (9, 0.6)):
        a = np.triu((rng.random((n, n)) < p).astype(np.int64), 1)
        out.append(from_adjacency(a + a.T))
    return out


GRAPHS = _graphs()


def _pyg(graphs: list, device: str = "cpu") -> object:
    from torch_geometric.data import Batch

    from matlang.runtime.pyg import to_pyg

    return Batch.from_data_list(to_pyg(graphs)).to(device)


#: every connected pattern of 3–5 nodes, and every 8th of the 112 of 6 nodes (C6 among them)
PATTERNS = connected_patterns(3, 5) + connected_patterns(6, 6)[::8]


@pytest.mark.parametrize("edges", PATTERNS, ids=str)
def test_torch_path_equals_the_host_for_treewidth_2_patterns(edges) -> None:  # type: ignore[no-untyped-def]
    if counting_sentence(edges, "graph") is None:  # a treewidth-3 spasm: the host counts it
        assert count_on_torch(edges, GRAPHS, "graph") is None
        assert matlang.count(edges, GRAPHS, constants="torch") == matlang.count(edges, GRAPHS)
        return
    for per in ("graph", "node"):
        host = matlang.count(edges, GRAPHS, per=per)
        got = count_on_torch(edges, GRAPHS, per)
        # every pattern of ≤ 5 nodes runs there; some 6-node spasms pass the compiler's size
        # limit (MAX_COMPILED_SIZE) and go to the host
        assert got == host or (got is None and len({v for e in edges for v in e}) == 6)
        assert matlang.count(edges, GRAPHS, per=per, constants="torch") == host


def test_torch_path_on_a_pyg_batch_and_one_graph() -> None:
    batch = _pyg(GRAPHS)
    assert device_of(batch) == torch.device("cpu") and device_of(GRAPHS) is None
    for pattern in ("C5", "C6", "diamond", "house"):
        assert count_on_torch(pattern, batch, "node") == matlang.count(pattern, batch, per="node")
    one = count_on_torch("C5", "petersen", "node")
    assert one == matlang.count("C5", "petersen", per="node") == [6] * 10
    assert count_on_torch("C5", GRAPHS, "edge") is None  # per edge: the host's
    assert matlang.count("K4", batch, constants="torch") == matlang.count("K4", batch)
    with pytest.raises(MatlangError, match="constants must be"):
        matlang.count("C5", "petersen", constants="gpu")


def test_torch_path_stays_below_float64s_exact_integers() -> None:
    big = from_adjacency(np.ones((60, 60), dtype=np.int64) - np.eye(60, dtype=np.int64))
    assert count_on_torch("C6", big, "graph") is not None  # K60: 59⁵ · 60 · c < 2⁵³
    huge = from_adjacency(np.ones((400, 400), dtype=np.int64) - np.eye(400, dtype=np.int64))
    assert count_on_torch("C6", huge, "graph") is None  # past the bound: the host counts it


@needs_cuda
def test_count_on_a_cuda_batch_runs_there() -> None:
    batch = _pyg(GRAPHS, "cuda")
    assert device_of(batch).type == "cuda"
    for pattern in ("C3", "C4", "C5", "C6", "C7", "diamond", "house"):
        for per in ("graph", "node"):
            want = matlang.count(pattern, GRAPHS, per=per, constants="host")
            assert count_on_torch(pattern, batch, per) == want
            assert matlang.count(pattern, batch, per=per) == want
