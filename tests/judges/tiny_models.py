"""A tiny GPT-2 judge built here (nothing downloaded): a character-level word-level tokenizer over
a given vocabulary (special tokens [PAD] 0, [UNK] 1, [EOS] 2, [BOS] 3) and a one-layer, 16-wide
model whose weights each test then sets by hand."""

from __future__ import annotations

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast


def char_tokenizer(vocab: dict[str, int]) -> PreTrainedTokenizerFast:
    """Every character is a token (a whole vocabulary entry longer than one character only
    decodes, as the answer token of a judge does)."""
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="[UNK]",
        pad_token="[PAD]",
        eos_token="[EOS]",
        bos_token="[BOS]",
    )


def tiny_gpt2(vocab_size: int, *, seed: int) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=4096,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=3,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    return GPT2LMHeadModel(config)
