"""The CPU reference the benchmarks print beside their figures, so that figures from machines of
different speed can be compared: a fixed pure-Python loop timed in the same run.

One "ref" is the time this loop takes on the machine, at that moment. A CPU-bound duration is
printed also as a multiple of it (``= 0.062 ref``) and a rate as what is done in that time
(``= 31.7 per ref``): a machine twice as slow doubles the seconds and the loop's time alike, so
those figures, and the targets written in them, hold on any machine.
"""

from __future__ import annotations

import time

REFERENCE_LOOP = "sum(i * i % 7 for i in range(5_000_000))"


def cpu_reference_s() -> float:
    """Seconds for ``sum(i * i % 7 for i in range(5_000_000))`` on this machine, now."""
    start = time.perf_counter()
    sum(i * i % 7 for i in range(5_000_000))
    return time.perf_counter() - start


def reference_line(reference: float) -> str:
    """The line each benchmark prints first among its figures."""
    return f"CPU reference: `{REFERENCE_LOOP}` took {reference:.3f} s = 1 ref (timed in this run)"


def _figure(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def in_ref(seconds: float, reference: float) -> str:
    """A CPU-bound duration in units of the reference: ``"= 0.062 ref"``."""
    return f"= {_figure(seconds / reference)} ref"


def per_ref(rate_per_s: float, reference: float) -> str:
    """A rate per second as a rate per reference time: ``"= 31.7 per ref"``."""
    return f"= {_figure(rate_per_s * reference)} per ref"
