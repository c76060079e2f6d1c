"""The `transformers` chat backend streams the same greedy reply on CUDA as on the CPU.

Tolerance: the same text, character for character, and the logits of every generated step
within 1e-4. Greedy decoding is the argmax of each step's logits, and float32 on both devices
(TF32 off, see conftest) moves a logit of this 2-layer model by ~1e-6: the same argmax wherever
the best token leads the second by more than that. The test checks first that its model's margin
is ≥ 1e-3 at every step on the CPU, so a different text means a wrong CUDA path, not a near tie.
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from pathlib import Path

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from chat.backends.transformers_local import load_model, model_input
from chat.models import Backend
from chat.services.generation import stream_reply
from tests.chat.backends.test_transformers_adapter import CHAT_TEMPLATE, _request, _tokenizer
from tests.gpu.accelerator import ACCELERATOR, gpu, timed

pytestmark = gpu

NEW_TOKENS = 48


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random GPT-2 over the adapter tests' character tokenizer; a wide initialisation spreads
    its logits, so each greedy step has a clear winner (checked in the test)."""
    path = tmp_path_factory.mktemp("gpu-chat-gpt2")
    torch.manual_seed(0)
    tokenizer = _tokenizer(CHAT_TEMPLATE)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_embd=64,
        n_layer=2,
        n_head=2,
        initializer_range=0.2,
        bos_token_id=3,
        eos_token_id=2,
        pad_token_id=0,
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _step_logits(path: Path, backend: Backend, device: str) -> torch.Tensor:
    """Each greedy step's logits, [steps, vocabulary], by calling `generate` directly."""
    loaded = load_model(str(path), device)
    inputs = loaded.tokenizer(model_input(loaded, _request(backend)), return_tensors="pt")
    with torch.no_grad():
        output = loaded.model.generate(
            **{k: v.to(device) for k, v in inputs.items()},
            max_new_tokens=NEW_TOKENS,
            do_sample=False,
            pad_token_id=0,
            output_logits=True,
            return_dict_in_generate=True,
        )
    return torch.cat(output.logits).float().cpu()


def test_the_streamed_greedy_reply_on_cuda_equals_the_cpu(gpt2_dir: Path) -> None:
    texts = {}
    for device in ("cpu", ACCELERATOR):
        backend = Backend(
            name=f"tiny-gpt2-{device}",
            adapter="transformers",
            config={"model_path": str(gpt2_dir), "max_new_tokens": NEW_TOKENS, "device": device},
        )

        async def collect(backend: Backend = backend) -> list[str]:
            request = _request(backend)
            async with aclosing(stream_reply(backend=backend, request=request)) as chunks:
                return [chunk async for chunk in chunks]

        chunks = timed("chat backend streaming", device, lambda: asyncio.run(collect()))
        assert len(chunks) > 1  # streamed, not one block
        assert load_model(str(gpt2_dir), device).model.device.type == device.split(":")[0]
        texts[device] = "".join(chunks), _step_logits(gpt2_dir, backend, device)
    (cpu_text, cpu_logits), (text, logits) = texts["cpu"], texts[ACCELERATOR]
    top = cpu_logits.topk(2, dim=1).values
    assert (top[:, 0] - top[:, 1]).min() >= 1e-3, "the test model has a near tie: reseed it"
    assert len(cpu_text) > 20  # a reply, not an early end of sequence
    torch.testing.assert_close(logits, cpu_logits, atol=1e-4, rtol=0)
    assert text == cpu_text
