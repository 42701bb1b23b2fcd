"""``python -m matlang.cli``: the same as the ``matlang`` command."""

from __future__ import annotations

import sys

from matlang.cli import main

sys.exit(main())
