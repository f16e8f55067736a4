"""``freeze_startup`` (what `seojobs worker` calls once it is built), in a process of its own:
it changes the collector of the whole process, which a test must not do to the suite's."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc
from seojobs.engine.worker import YOUNG_COLLECTION_EVERY, freeze_startup
before = gc.get_threshold()
freeze_startup()
after = gc.get_threshold()
print(gc.get_freeze_count() > 10_000, after == (YOUNG_COLLECTION_EVERY, *before[1:]))
print(gc.isenabled())
"""


def test_startup_objects_leave_the_collectors_view_and_young_collections_are_rarer() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "True", "True"]
