"""Garbage-collector settings for a long-running service.

Measured in ``bench/`` (docs/performance.md): under load, CPython's default
thresholds (700, 10, 10) run a collection every few requests, and every full
collection walks every object the process ever made at start-up (modules, protobuf
descriptors, pydantic schemas), tens of thousands of objects that are never garbage.
:func:`tune_for_serving` does two things once the service is built and before it
serves:

* ``gc.freeze()`` moves everything alive at that moment into the permanent
  generation, which no collection visits again;
* a higher first-generation threshold makes young collections rarer; each one has
  more to do, but the objects a request makes are mostly freed by reference
  counting anyway, so the total work falls.

Both only change when collections happen, never what is collected: reference
cycles are still found and freed.
"""

from __future__ import annotations

import gc

SERVING_THRESHOLDS = (10_000, 20, 20)
"""(generation 0, 1, 2) thresholds while serving; CPython's defaults are (700, 10, 10)."""


def tune_for_serving() -> None:
    """Collect once, freeze the survivors, and raise the thresholds (idempotent)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)


__all__ = ["SERVING_THRESHOLDS", "tune_for_serving"]
