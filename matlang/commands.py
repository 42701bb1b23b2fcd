"""Subcommands of the language: ``parse`` and ``eval``."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add this module's subcommands to ``sub`` (an argparse subparsers object)."""
    del sub


def _unused(args: argparse.Namespace) -> int:
    return 0
