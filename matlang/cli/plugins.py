"""Commands that other distributions add to ``matlang``.

A distribution declares them in the ``matlang.cli`` entry point group; each entry point names a
``register(subparsers)`` function, as the library's own command modules have. The experiments
(``pip install -e benchmarks``) add ``bench`` and ``report`` this way, so the library never
imports them. When a command of :data:`KNOWN` is not provided, ``matlang`` still lists it and
running it says how to get it (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import EntryPoint, entry_points
from typing import Any

GROUP = "matlang.cli"

#: Commands that a separate distribution provides: name → its help line.
KNOWN = {
    "bench": "run the paper's experiments (Tables 1-4, the TU appendix, BREC)",
    "report": "assemble result files into Markdown tables and plots",
}

#: How to get the experiments when they are not installed (they are not part of the wheel).
EXPERIMENTS_HINT = (
    "the experiments are a separate distribution, matlang-benchmarks: from a clone of the "
    "repository, run `pip install -e benchmarks` (bash .ci/setup does)"
)


def plugin_entry_points() -> list[EntryPoint]:
    """The installed ``matlang.cli`` entry points: those of :data:`KNOWN` first, in its order,
    then the others by name."""
    order = {name: i for i, name in enumerate(KNOWN)}
    found = entry_points(group=GROUP)
    return sorted(found, key=lambda ep: (order.get(ep.name, len(order)), ep.name))


def register(sub: Any) -> None:
    """Add every plugin command; a command of :data:`KNOWN` that no plugin provides (or whose
    plugin fails to load) becomes one that says how to get it."""
    done: set[str] = set()
    broken: dict[str, str] = {}
    for ep in plugin_entry_points():
        if ep.name in done or ep.name in sub.choices:
            continue  # installed twice, or a name the library has: the first one wins
        try:
            add = ep.load()
        except Exception as e:  # an installed plugin whose code is gone or broken
            broken[ep.name] = f"{ep.value} did not load: {e}"
            continue
        add(sub)
        done.add(ep.name)
    for name, help in KNOWN.items():
        if name not in done and name not in sub.choices:
            add_missing(sub, name, help, broken.get(name))


def add_missing(sub: Any, name: str, help: str, reason: str | None = None) -> None:
    """Register ``name`` as a command that says how to install the experiments (exit 2);
    ``reason``: why its installed plugin did not load."""
    text = f"matlang {name}: {EXPERIMENTS_HINT}"
    if reason:
        text += f" ({reason})"
    p = sub.add_parser(name, help=f"{help} (needs matlang-benchmarks)", description=text + ".")
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def missing(args: argparse.Namespace) -> int:
        print(text, file=sys.stderr)
        return 2

    p.set_defaults(func=missing)
