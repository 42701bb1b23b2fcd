"""Fixtures of the bench tests."""

from __future__ import annotations

import pytest

from tests.fixtures import counting_data


@pytest.fixture
def small_paperlike(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--dataset paperlike`` on 36 small graphs instead of 5000 (the CLI tests check files
    and messages; the generator has its own tests)."""
    from matlang.runtime import generators

    monkeypatch.setattr(generators, "paperlike_random", lambda seed=0: counting_data(36))
