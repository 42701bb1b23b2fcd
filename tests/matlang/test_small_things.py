"""What a new user hit: help(matlang.compile) and print(load_tu(...))."""

from __future__ import annotations

import inspect

import matlang


def test_compile_shows_its_real_keyword_arguments():
    from matlang.compiler.api import compile as real

    front, back = inspect.signature(matlang.compile), inspect.signature(real)
    assert list(front.parameters) == list(back.parameters)
    for name, p in back.parameters.items():
        assert front.parameters[name].default == p.default, name
        assert front.parameters[name].kind == p.kind, name


def test_tu_data_prints_one_line():
    from matlang.data import load_tu

    text = repr(load_tu("mutag"))
    assert text == "TUData('mutag', 188 graphs, 3371 nodes, 7 node features, 2 classes, 10 folds)"


def test_sentence_conv_with_edge_weight_warns_nothing():
    import warnings

    import torch

    from matlang.nn import SentenceConv

    conv = SentenceConv(3, 4, ["A", "A ⊙ A²"])
    x = torch.randn(4, 3)
    ei = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 0], [1, 0, 2, 1, 3, 2, 0, 3]])
    w = torch.tensor([1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert conv(x, ei, edge_weight=w).shape == (4, 4)
    assert not [str(c.message) for c in caught if "Sparse invariant" in str(c.message)]
