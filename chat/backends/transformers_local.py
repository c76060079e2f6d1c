"""The `transformers` adapter: a local Hugging Face model directory, causal LM or seq2seq.

Never downloads (`local_files_only=True`). The model is loaded once per process and path, on
CUDA when available (config `device`: auto | cpu | cuda). Generation runs in a thread and streams
through `TextIteratorStreamer`; when the consumer stops early (timeout, closed page) a stopping
criterion ends the generation. The tokenizer's chat template is used when it has one, else a
plain "speaker: text" transcript.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from chat.backends.base import BackendSpec, ChatRequest
from chat.backends.errors import BackendError

DEFAULT_MAX_NEW_TOKENS = 128
LABELS = {
    "zh": ("用户", "机器人", "："),
    "en": ("User", "Bot", ": "),
    "ja": ("ユーザー", "ボット", "："),
}


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    device: str
    encoder_decoder: bool
    max_positions: int | None


_models: dict[tuple[str, str], LoadedModel] = {}
_load_lock = threading.Lock()


def _device(choice: str) -> str:
    import torch

    if choice == "cuda" and not torch.cuda.is_available():
        raise BackendError("device 'cuda' was asked for but no GPU is available", kind="config")
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def load_model(path: str, device_choice: str = "auto") -> LoadedModel:
    device = _device(device_choice)
    with _load_lock:
        loaded = _models.get((path, device))
        if loaded is not None:
            return loaded
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
        )

        try:
            config = AutoConfig.from_pretrained(path, local_files_only=True)
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
            model = auto.from_pretrained(path, local_files_only=True).to(device).eval()
        except (OSError, ValueError) as exc:
            raise BackendError(
                f"cannot load the model at {path}: {str(exc).splitlines()[0][:200]}",
                kind="config",
            ) from None
        positions = getattr(config, "max_position_embeddings", None) or getattr(
            config, "n_positions", None
        )
        loaded = _models[(path, device)] = LoadedModel(
            model, tokenizer, device, bool(config.is_encoder_decoder), positions
        )
        return loaded


def _transcript(request: ChatRequest) -> str:
    user, bot, colon = LABELS.get(request.language, LABELS["en"])
    lines = [request.prompt, ""] if request.prompt else []
    for speaker, text in request.history:
        lines.append(f"{user if speaker == 'user' else bot}{colon}{text}")
    lines.append(f"{bot}{colon}")
    return "\n".join(lines)


def model_input(loaded: LoadedModel, request: ChatRequest) -> str:
    """The text fed to the model: the chat template when the tokenizer has one."""
    tokenizer = loaded.tokenizer
    if not loaded.encoder_decoder and getattr(tokenizer, "chat_template", None):
        messages = [{"role": "system", "content": request.prompt}] if request.prompt else []
        messages += [
            {"role": "user" if speaker == "user" else "assistant", "content": text}
            for speaker, text in request.history
        ]
        try:
            return tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        except Exception:  # noqa: BLE001 - a template's own checks (no system role, …)
            pass
    return _transcript(request)


class _Stop:
    """A stopping criterion raised from another thread when the consumer goes away."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        # On the ids' device: `generate` ORs it into a flag on that device (a CPU flag and CUDA
        # ids fail there).
        return torch.full(
            (input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device
        )


def _generation_kwargs(config: dict, tokenizer: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "max_new_tokens": int(config.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)),
        "do_sample": bool(config.get("do_sample", False)),
    }
    if kwargs["do_sample"]:
        for key in ("temperature", "top_p"):
            if key in config:
                kwargs[key] = config[key]
    if "repetition_penalty" in config:
        kwargs["repetition_penalty"] = config["repetition_penalty"]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad is not None:
        kwargs["pad_token_id"] = pad
    return kwargs


class TransformersAdapter:
    async def stream(
        self, spec: BackendSpec, request: ChatRequest, *, notes: list[str]
    ) -> AsyncIterator[str]:
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        config = spec.config
        loaded = await asyncio.to_thread(
            load_model, config["model_path"], config.get("device", "auto")
        )
        tokenizer = loaded.tokenizer
        kwargs = _generation_kwargs(config, tokenizer)
        inputs = tokenizer(model_input(loaded, request), return_tensors="pt")
        if loaded.max_positions and not loaded.encoder_decoder:
            # Keep the most recent context: prompt + history must leave room for the reply.
            keep = max(loaded.max_positions - kwargs["max_new_tokens"], 1)
            inputs = {k: v[:, -keep:] for k, v in inputs.items()}
        inputs = {k: v.to(loaded.device) for k, v in inputs.items()}
        streamer = TextIteratorStreamer(
            tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=spec.timeout_s
        )
        stop = _Stop()
        failure: list[BaseException] = []

        def generate() -> None:
            try:
                loaded.model.generate(
                    **inputs,
                    **kwargs,
                    streamer=streamer,
                    stopping_criteria=StoppingCriteriaList([stop]),
                )
            except BaseException as exc:  # noqa: BLE001 - reported to the consumer below
                failure.append(exc)
                streamer.end()

        thread = threading.Thread(target=generate, name=f"generate-{spec.name}", daemon=True)
        thread.start()
        sentinel = object()
        try:
            while True:
                try:
                    chunk = await asyncio.to_thread(next, streamer, sentinel)
                except Exception:  # noqa: BLE001  # the streamer's queue timed out: generation stalled
                    raise BackendError(
                        f"the model produced nothing within {spec.timeout_s:g} s", kind="timeout"
                    ) from None
                if chunk is sentinel:
                    break
                if chunk:
                    yield chunk
        finally:
            stop.event.set()
        if failure:
            raise BackendError(
                f"generation failed: {type(failure[0]).__name__}: {str(failure[0])[:200]}",
                kind="bad_response",
            )
