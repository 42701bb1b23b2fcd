"""The MATLANG grammar, installed as package data beside the code."""

from __future__ import annotations

from pathlib import Path

GRAMMAR_PATH = Path(__file__).with_name("matlang.lark")
