"""The CPU reference the benchmarks print beside their figures, so that figures from machines of
different speed can be compared: a fixed pure-Python loop timed in the same run."""

from __future__ import annotations

import time


def cpu_reference_s() -> float:
    """Seconds for ``sum(i * i % 7 for i in range(5_000_000))`` on this machine, now."""
    start = time.perf_counter()
    sum(i * i % 7 for i in range(5_000_000))
    return time.perf_counter() - start
