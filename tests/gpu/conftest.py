"""Float32 on both sides: TF32 (tensor-core matmuls and convolutions with a 10-bit mantissa) is
turned off for these tests, so CUDA and the CPU differ only in the order of their float32 sums,
which is what the tolerances of the tests allow for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _float32_matmuls() -> Iterator[None]:
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
