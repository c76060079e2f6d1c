"""What the `gpu` tests share: the device compared with the CPU, the skip without it, and the
timings `bin/gpu-check` prints.

Each test runs one code path on the CPU and on the accelerator and compares the results within a
tolerance its module states. ``GPU_CHECK_DEVICE`` names the accelerator (default ``cuda``); set to
``cpu`` it runs every comparison CPU against CPU, which checks the tests themselves on a machine
without a GPU (``bin/gpu-check --dry-run``). Each run of a path is timed warm (after a first call
on the same device) and, when ``GPU_CHECK_TIMINGS`` names a file, appended to it as a JSON line.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
import torch

T = TypeVar("T")

ACCELERATOR = os.environ.get("GPU_CHECK_DEVICE", "cuda")

needs_accelerator = pytest.mark.skipif(
    ACCELERATOR.startswith("cuda") and not torch.cuda.is_available(),
    reason="no CUDA device (bin/gpu-check runs these on a machine with one)",
)
gpu = [pytest.mark.gpu, needs_accelerator]


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(
    path: str, device: str, run: Callable[[], T], warm_up: Callable[[], object] | None = None
) -> T:
    """``warm_up()`` (default: ``run()``) to start the CUDA context, kernels and caches, then
    ``run()`` timed; its result. The time goes to ``GPU_CHECK_TIMINGS`` under ``path`` and
    ``device``."""
    (warm_up or run)()
    _synchronize(device)
    start = time.perf_counter()
    result = run()
    _synchronize(device)
    seconds = time.perf_counter() - start
    target = os.environ.get("GPU_CHECK_TIMINGS")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps({"path": path, "device": device, "seconds": seconds}) + "\n")
    return result
