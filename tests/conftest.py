"""Suite-wide settings.

Hypothesis: no deadlines (the machine is shared and slow); under CI (``CI`` set, as the CI runner
does) examples are derandomised, so CI checks the same cases on every run and a failure there is
reproducible here with ``CI=1 python -m pytest``.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
