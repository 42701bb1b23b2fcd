"""``matlang data path|list``: where the datasets are, and which ones are there.

Examples::

    matlang data path          # the folder in use ($MATLANG_DATA, else the shipped copy)
    matlang data list          # every dataset, its files and whether they are present
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: Any) -> None:
    """Add the ``data`` subcommand."""
    p = sub.add_parser(
        "data",
        help="where the datasets are (MATLANG_DATA or the shipped copy) and which are present",
        description="The datasets ship with matlang; MATLANG_DATA points at another folder.",
    )
    dsub = p.add_subparsers(dest="action", metavar="ACTION")
    path = dsub.add_parser("path", help="print the data folder in use")
    path.set_defaults(func=run_path)
    lst = dsub.add_parser("list", help="the datasets, their files and whether they are present")
    lst.add_argument("--json", action="store_true", help="one JSON object")
    lst.set_defaults(func=run_list)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_path(args: argparse.Namespace) -> int:
    from matlang.runtime.datasets import data_root

    print(data_root())  # a DataError naming MATLANG_DATA when there is none
    return 0


def run_list(args: argparse.Namespace) -> int:
    from matlang.runtime.datasets import DATASETS, data_available, data_root

    root = data_root()
    rows: dict[str, dict[str, Any]] = {
        name: {"present": data_available(name), "files": list(info.files)}
        for name, info in DATASETS.items()
    }
    if args.json:
        print(json.dumps({"root": str(root), "datasets": rows}, indent=2))
        return 0
    print(f"data folder: {root}")
    width = max(map(len, rows))
    for name, row in rows.items():
        mark = "yes" if row["present"] else "MISSING"
        print(f"  {name:<{width}}  {mark:<7}  {', '.join(row['files'])}")
    return 0
