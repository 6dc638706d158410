"""Helpers shared by the benchmark scripts: median wall time and a line naming the machine."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeats: int = 5) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def machine() -> str:
    """``machine: x86_64, 2 cores, Python 3.11.7``."""
    return f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
