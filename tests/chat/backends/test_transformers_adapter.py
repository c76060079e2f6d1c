"""The `transformers` adapter with tiny models built here (nothing is downloaded)."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from pathlib import Path

import pytest
import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
)

from chat.backends.transformers_local import _Stop, load_model, model_input
from chat.models import Backend
from chat.services.generation import (
    BackendError,
    build_request,
    complete_reply_sync,
    stream_reply,
)

CHARS = sorted(set("你好呀我是机器人用户：\n- 今天天气很好吗？abcdefghijklmnopqrstuvwxyz .,!?"))
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def _tokenizer(chat_template: str | None = None) -> PreTrainedTokenizerFast:
    vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2, "[BOS]": 3}
    for char in CHARS:
        vocab.setdefault(char, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="[UNK]",
        pad_token="[PAD]",
        eos_token="[EOS]",
        bos_token="[BOS]",
    )
    if chat_template:
        tokenizer.chat_template = chat_template
    return tokenizer


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-gpt2")
    torch.manual_seed(0)
    tokenizer = _tokenizer(CHAT_TEMPLATE)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_embd=16,
        n_layer=2,
        n_head=2,
        bos_token_id=3,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        # A constant final hidden state that points at 好: the greedy reply is 好好好…, which
        # the streamer flushes character by character (CJK), so streaming is observable.
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.copy_(torch.randn(16))
        model.lm_head.weight[tokenizer.convert_tokens_to_ids("好")] = (
            model.transformer.ln_f.bias * 10
        )
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def bart_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-bart")
    torch.manual_seed(0)
    tokenizer = _tokenizer()
    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=256,
        pad_token_id=0,
        bos_token_id=3,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_bos_token_id=None,
        forced_eos_token_id=None,
    )
    model = BartForConditionalGeneration(config)
    with torch.no_grad():  # a random model may say nothing but [UNK]: make it say 你好…
        model.final_logits_bias[0, tokenizer.convert_tokens_to_ids("你")] = 50.0
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _request(backend: Backend, language: str = "zh"):
    return build_request(
        backend=backend,
        skill="persona",
        language=language,
        grounding={"persona": {"bot": ["我是机器人"], "user": ["今天很好"]}},
        history=[("user", "你好"), ("system", "你好呀"), ("user", "今天天气好吗？")],
    )


def _expected(path: Path, backend: Backend, max_new_tokens: int) -> str:
    """What the model says for the same input when called directly."""
    loaded = load_model(str(path))
    text = model_input(loaded, _request(backend))
    inputs = loaded.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        output = loaded.model.generate(
            **inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=0
        )
    if not loaded.encoder_decoder:
        output = output[:, inputs["input_ids"].shape[1] :]
    return loaded.tokenizer.decode(output[0], skip_special_tokens=True)


def test_a_causal_lm_streams_its_greedy_reply_with_the_chat_template(gpt2_dir: Path) -> None:
    backend = Backend(
        name="tiny-gpt2",
        adapter="transformers",
        config={"model_path": str(gpt2_dir), "max_new_tokens": 12},
    )
    request = _request(backend)
    loaded = load_model(str(gpt2_dir))
    text = model_input(loaded, request)
    assert text.startswith("<system>") and text.endswith("<user>今天天气好吗？\n<assistant>")
    assert "我是机器人" in text

    async def collect() -> list[str]:
        async with aclosing(stream_reply(backend=backend, request=request)) as chunks:
            return [chunk async for chunk in chunks]

    chunks = asyncio.run(collect())
    assert len(chunks) > 1  # streamed, not one block
    expected = _expected(gpt2_dir, backend, 12)
    assert expected == "好" * 12
    assert "".join(chunks) == expected
    assert load_model(str(gpt2_dir)) is loaded  # cached per process


def test_a_history_longer_than_the_model_allows_keeps_the_latest_tokens(gpt2_dir: Path) -> None:
    backend = Backend(
        name="tiny-gpt2", adapter="transformers", config={"model_path": str(gpt2_dir)}
    )
    request = build_request(
        backend=backend,
        skill="chitchat",
        language="zh",
        grounding={},
        history=[("user", "你好呀" * 200)],  # 600 tokens for a 256-position model
    )
    assert complete_reply_sync(backend=backend, request=request).text


def test_a_seq2seq_model_answers_from_a_transcript(bart_dir: Path) -> None:
    backend = Backend(
        name="tiny-bart",
        adapter="transformers",
        config={"model_path": str(bart_dir), "max_new_tokens": 8},
    )
    loaded = load_model(str(bart_dir))
    assert loaded.encoder_decoder
    text = model_input(loaded, _request(backend))
    assert text.endswith("用户：今天天气好吗？\n机器人：")
    assert model_input(loaded, _request(backend, "en")).endswith("User: 今天天气好吗？\nBot: ")
    reply = complete_reply_sync(backend=backend, request=_request(backend))
    expected = _expected(bart_dir, backend, 8)
    assert expected.startswith("你")
    assert reply.text == expected


def test_a_directory_that_is_not_a_model_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    backend = Backend(name="broken", adapter="transformers", config={"model_path": str(tmp_path)})
    with pytest.raises(BackendError) as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "config"
    assert str(tmp_path) in str(caught.value)


def test_the_stop_flag_is_on_the_device_of_the_ids() -> None:
    """`generate` ORs the stop flag into one on the ids' device: a CPU flag beside CUDA ids fails
    there (the `meta` device stands in for CUDA on a machine without one)."""
    from transformers import StoppingCriteriaList

    stop = _Stop()
    ids = torch.zeros((2, 3), dtype=torch.long, device="meta")
    assert StoppingCriteriaList([stop])(ids, None).device == ids.device
    stop.event.set()
    assert StoppingCriteriaList([stop])(torch.zeros((2, 3), dtype=torch.long), None).all()
