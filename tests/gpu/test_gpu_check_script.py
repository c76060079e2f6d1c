"""`bin/gpu-check` on a machine without CUDA: says so, the gpu tests skip, exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the check would run")
def test_without_cuda_it_says_so_and_exits_0() -> None:
    env = {**os.environ, "VENV": str(Path(sys.executable).parent.parent)}
    env.pop("GPU_CHECK_DEVICE", None)
    done = subprocess.run(
        [str(ROOT / "bin" / "gpu-check")], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no CUDA device on this machine" in done.stdout
    assert "6 skipped" in done.stdout
