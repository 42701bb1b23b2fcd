"""Issue 32, items 4, 5, 8 and 9: bad input gives the same project error at every entry point
(compiled modules, layers, the transform, both evaluators), and trailing graphs without nodes
get their rows. The messages come from one place (matlang.inputs, matlang.graphs.pyg_layout)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sps
import torch

import matlang
from matlang import limits
from matlang.errors import GraphError
from matlang.graphs import from_edge_index, named
from matlang.nn import SentenceConv, SentenceReadout
from matlang.transforms import SentenceFeatures

TRIANGLE = torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])


class Data(SimpleNamespace):
    """A duck-typed data object (PyG's Data need not be installed)."""


def data(**fields: Any) -> Data:
    return Data(**{"x": None, **fields})


# --------------------------------------------------------------------------- one error everywhere


def entry_points() -> dict[str, Any]:
    conv = SentenceConv(1, 2, ["A", "(A³ ⊙ I) 𝟏"])
    readout = SentenceReadout(["tr(A³) / 6"])
    features = SentenceFeatures(["(A³ ⊙ I) 𝟏", "tr(A³) / 6"])
    module = matlang.compile("tr(A³) / 6")
    return {
        "evaluate": lambda d: matlang.evaluate("tr(A³) / 6", d),
        "evaluate sparse": lambda d: matlang.evaluate("tr(A³) / 6", d, sparse=True),
        "compiled": module,
        "SentenceConv": conv,
        "SentenceReadout": readout,
        "SentenceFeatures": features,
    }


BAD = [
    (
        "negative num_nodes",
        dict(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=-1),
        "num_nodes must be at least 0, got -1",
    ),
    (
        "float edge_index",
        dict(edge_index=TRIANGLE.float(), num_nodes=3),
        "edge_index must hold integers, got torch.float32",
    ),
    (
        "(E, 2) edge_index",
        dict(edge_index=TRIANGLE.t().contiguous(), num_nodes=3),
        "edge_index must have shape (2, E), got (6, 2)",
    ),
    (
        "node id out of range",
        dict(edge_index=torch.tensor([[0, 7], [7, 0]]), num_nodes=3),
        "edge_index refers to node 7 but the batch has 3 nodes",
    ),
    (
        "x rows",
        dict(edge_index=TRIANGLE, num_nodes=3, x=torch.ones(5, 1)),
        "x of shape (5, 1) has not one row per node (3)",
    ),
    (
        "ptr against batch",
        dict(
            edge_index=TRIANGLE,
            num_nodes=3,
            x=torch.ones(3, 1),
            batch=torch.zeros(3, dtype=torch.long),
            ptr=torch.tensor([0, 1, 3]),
        ),
        "ptr [0, 1, 3] contradicts the batch vector: node 1 is in graph 0 by the batch vector "
        "but in graph 1 by ptr",
    ),
]


@pytest.mark.parametrize(("what", "fields", "message"), BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("entry", list(entry_points()))
def test_the_same_bad_input_gives_the_same_error(
    entry: str, what: str, fields: dict[str, Any], message: str
) -> None:
    fn = entry_points()[entry]
    with pytest.raises(GraphError) as err:
        fn(data(**fields))
    assert message in str(err.value), (entry, what)


def test_numpy_edge_index_is_read_as_a_tensor() -> None:
    torch.manual_seed(0)
    conv = SentenceConv(1, 2, ["A", "(A³ ⊙ I) 𝟏"])
    x = torch.ones(3, 1)
    want = conv(x, TRIANGLE)
    torch.testing.assert_close(conv(x, TRIANGLE.numpy()), want)
    torch.testing.assert_close(conv(data(edge_index=TRIANGLE.numpy(), x=x, num_nodes=3)), want)
    with pytest.raises(GraphError, match="edge_index must hold integers, got dtype float64"):
        conv(x, TRIANGLE.numpy().astype(np.float64))


# --------------------------------------------------------------------------- sizes


def test_size_limits() -> None:
    with pytest.raises(GraphError, match="MAX_DENSE_NODES"):
        matlang.evaluate("onesᵀ A ones", "K100000")
    with pytest.raises(GraphError, match="MAX_DENSE_NODES"):
        named(f"K{limits.MAX_DENSE_NODES + 1}")
    assert named("K30").num_nodes == 30
    with pytest.raises(GraphError, match="MAX_DENSE_NODES"):
        from_edge_index(np.array([[0, 30_000], [30_000, 0]]))
    with pytest.raises(GraphError, match="MAX_NODES"):  # never allocates 10^11 nodes
        matlang.evaluate(
            "onesᵀ A ones",
            data(edge_index=torch.tensor([[0, 99_999_999_999], [99_999_999_999, 0]])),
            sparse=True,
        )
    huge = sps.csr_matrix((10**6, 10**6), dtype=np.int64)
    with pytest.raises(GraphError, match="MAX_DENSE_NODES"):  # not densified
        matlang.evaluate("onesᵀ A ones", huge, sparse=False)
    assert matlang.evaluate("onesᵀ A ones", huge) == 0  # read sparse


def test_eval_edges_with_a_huge_node_id(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from matlang.cli import main

    f = tmp_path / "big.txt"
    f.write_text("0 99999999999\n99999999999 0\n")
    assert main(["eval", "onesᵀ A ones", "--edges", str(f)]) == 1
    err = capsys.readouterr().err
    assert "edge_index refers to node 99999999999" in err and "MAX_NODES" in err


# --------------------------------------------------------------------------- evaluators agree


def test_sparse_evaluator_returns_a_list_for_a_one_graph_pyg_batch() -> None:
    d = data(
        edge_index=TRIANGLE,
        num_nodes=3,
        batch=torch.zeros(3, dtype=torch.long),
        ptr=torch.tensor([0, 3]),
    )
    assert matlang.evaluate("onesᵀ A ones", d) == [6]
    assert matlang.evaluate("onesᵀ A ones", d, sparse=True) == [6]
    assert (
        matlang.evaluate("onesᵀ A ones", data(edge_index=TRIANGLE, num_nodes=3), sparse=True) == 6
    )


def test_sparse_evaluator_reads_scipy_as_the_dense_one() -> None:
    weighted = sps.csr_matrix(np.array([[0, 2.0], [2.0, 0]]))
    for sparse in (False, True):
        with pytest.raises(GraphError, match=r"adjacency must be 0/1, entry \(0, 1\) is 2.0"):
            matlang.evaluate("onesᵀ A ones", weighted, sparse=sparse)
    # explicit zeros are no entries, repeated entries add up (as toarray())
    a = sps.coo_matrix(
        (np.array([1, 1, 1, 1, 0]), (np.array([0, 1, 1, 2, 0]), np.array([1, 0, 2, 1, 2]))),
        shape=(3, 3),
    )
    assert (
        matlang.evaluate("onesᵀ A ones", a, sparse=True) == matlang.evaluate("onesᵀ A ones", a) == 4
    )


# --------------------------------------------------------------------------- layers and transform


def test_readout_counts_trailing_graphs_without_nodes() -> None:
    layer = SentenceReadout(["tr(A³) / 6", "1 + onesᵀ ones"])
    d = data(
        edge_index=TRIANGLE,
        num_nodes=3,
        batch=torch.zeros(3, dtype=torch.long),
        ptr=torch.tensor([0, 3, 3, 3]),
        num_graphs=3,
    )
    want = torch.tensor([[1.0, 4.0], [0.0, 1.0], [0.0, 1.0]])
    torch.testing.assert_close(layer(d), want)
    x, b = torch.ones(3, 1), torch.zeros(3, dtype=torch.long)
    torch.testing.assert_close(layer(x, TRIANGLE, b, num_graphs=3), want)
    # without num_graphs the batch vector cannot show graphs after its last one (PyG's rule)
    torch.testing.assert_close(layer(x, TRIANGLE, b), want[:1])
    with pytest.raises(GraphError, match="names graph 0 but num_graphs is 0"):
        layer(x, TRIANGLE, b, num_graphs=0)
    channel = SentenceReadout(["input h; 2 + onesᵀ h"], in_channels=1)
    torch.testing.assert_close(channel(x, TRIANGLE, b, num_graphs=2), torch.tensor([[5.0], [2.0]]))


def test_features_on_a_graph_without_nodes_and_duck_typed_objects() -> None:
    t = SentenceFeatures(["(A³ ⊙ I) 𝟏", "tr(A³) / 6"])
    out = t(data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0, x=torch.zeros(0, 2)))
    assert out.x.shape == (0, 3) and out.graph_features.tolist() == [[0.0]]
    out = t(Data(edge_index=TRIANGLE, num_nodes=3))
    assert out.x.tolist() == [[2.0], [2.0], [2.0]] and out.graph_features.tolist() == [[1.0]]
    assert not hasattr(Data(edge_index=TRIANGLE, num_nodes=3), "graph_features")


# --------------------------------------------------------------------------- malformed objects

FIELDS: dict[str, list[Any]] = {
    "edge_index": [
        TRIANGLE,
        TRIANGLE.float(),
        TRIANGLE.t().contiguous(),
        TRIANGLE[0],
        TRIANGLE.numpy(),
        TRIANGLE.numpy().astype(np.float64),
        TRIANGLE.tolist(),
        torch.tensor([[0, -1], [-1, 0]]),
        torch.tensor([[0, 10**12], [10**12, 0]]),
        TRIANGLE.bool(),
        TRIANGLE[None],
        torch.zeros(2, 0, dtype=torch.long),
        torch.tensor([[0, 1], [1, 2]]),  # no reverse edges
    ],
    "num_nodes": [None, 3, 3, -1, 2.5, "3", 10**12, True, torch.tensor(3), 0],
    "x": [
        None,
        torch.ones(3, 1),
        torch.ones(5, 1),
        torch.ones(0),
        torch.tensor(1.0),
        torch.ones(3, 2, dtype=torch.long),
        torch.ones(3, 1, 2),
    ],
    "batch": [
        None,
        torch.zeros(3, dtype=torch.long),
        torch.zeros(2, dtype=torch.long),
        torch.zeros(3),
        torch.tensor([1, 0, 0]),
        torch.tensor([0, 0, 5]),
    ],
    "ptr": [
        None,
        torch.tensor([0, 3]),
        torch.tensor([0, 1, 3]),
        torch.tensor([0, 3, 3]),
        torch.tensor([3, 0]),
        torch.tensor([0.0, 3.0]),
        torch.tensor([[0, 3]]),
    ],
    "num_graphs": [None, 1, 2, -1],
    "edge_weight": [None, torch.ones(6), torch.ones(2), torch.full((6,), float("nan"))],
}


def malformed(seed: int) -> Data:
    rng = np.random.default_rng(seed)
    fields = {k: v[int(rng.integers(len(v)))] for k, v in FIELDS.items()}
    return Data(**{k: v for k, v in fields.items() if v is not None or k == "x"})


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("MATLANG_BAD_CASES", 40))))
def test_malformed_data_objects_give_values_or_project_errors(seed: int) -> None:
    from matlang.errors import MatlangError

    d = malformed(seed)
    for name, fn in entry_points().items():
        try:
            fn(d)
        except MatlangError:
            pass
        except Exception as err:  # a foreign exception is the bug this test is for
            pytest.fail(f"{name} on {d}: {type(err).__name__}: {err}")


@pytest.mark.parametrize("form", ["tensor", "numpy", "list"])
def test_every_entry_point_reads_edge_index_forms_alike(form: str) -> None:
    ei = {"tensor": TRIANGLE, "numpy": TRIANGLE.numpy(), "list": TRIANGLE.tolist()}[form]
    d = data(edge_index=ei, num_nodes=3)
    assert matlang.evaluate("tr(A³)", d) == matlang.evaluate("tr(A³)", d, sparse=True) == 6
    assert matlang.compile("tr(A³)")(d).tolist() == [6.0]
    assert SentenceReadout(["tr(A³)"])(d).tolist() == [[6.0]]
