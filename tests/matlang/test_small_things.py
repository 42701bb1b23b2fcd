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
