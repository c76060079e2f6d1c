"""Text normalisation and tokenization profiles, explicit and versioned.

Every lexical and word-embedding metric sees text through one :class:`TextProfile`; its
:attr:`TextProfile.signature` goes into each metric's signature, so a stored score always says how
its text was cut.

``default`` profile (version ``NORMALISATION_VERSION``; version 2 made ``zh-char`` equal to
sacrebleu's ``zh`` tokenizer on general punctuation and ``&`` entities, where version 1 differed):

1. Unicode NFKC (full-width Latin letters and digits become ASCII; ``，`` becomes ``,``).
2. Whitespace runs collapse to one space, and whitespace *between two CJK characters* is removed,
   so the segmented ``你 好 吗`` and the unsegmented ``你好吗`` tokenize alike (LIC and DuConv data
   are word-segmented, LLM replies are not).
3. Optional lower-casing (off by default, as in sacrebleu).
4. A tokenizer:

   * ``zh-char`` (default for ``zh``): exactly sacrebleu's ``zh`` tokenizer
     (``sacrebleu.tokenizers.tokenizer_zh.TokenizerZh``, then split on spaces): every character of
     its "Chinese" table is a token -- Han, CJK punctuation, full-width forms, and, through that
     table's literal ``u'\u20000'``, all of U+2001-U+2A6D (dashes, curly quotes, ellipses) --
     and the rest (Latin words, numbers, ASCII punctuation, emoji) is split by its regexp rules.
     Character tokens are what the LIC 2021 evaluation scripts score Chinese by.
   * ``ja-char`` (default for ``ja``): the same rules with kana and supplementary-plane Han also
     split into characters (sacrebleu's table has no kana).
   * ``zh-jieba``: jieba words (``jieba.lcut``, HMM on); the jieba version is in the signature.
   * ``ja-sudachi``: SudachiPy morphemes, split mode A (short units, close to MeCab/IPADIC), with
     the ``sudachidict-core`` dictionary from pip; both versions are in the signature.
   * ``en-13a``: sacrebleu's ``tokenizer_13a`` (mteval-v13a, WMT's standard).

``lic`` profile: the LIC 2021 / DuConv scripts' view of the data
(``baidu/knowledge-driven-dialogue``, ``generative_pt/tools/eval.py``): no normalisation at all,
tokens are ``text.strip().split(" ")`` exactly as given, so the data's own word segmentation
decides what a token is (an unsegmented reply is one token). ``docs/metrics.md`` explains why the
default profile is the fairer one.
"""

from __future__ import annotations

import functools
import importlib.metadata
import itertools
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from metrics.scorers.ngram_kernels import kernels

NORMALISATION_VERSION = 2
PROFILES = ("default", "lic")
LANGUAGES = ("zh", "en", "ja")
TOKENIZERS = ("zh-char", "zh-jieba", "ja-char", "ja-sudachi", "en-13a")
DEFAULT_TOKENIZER = {"zh": "zh-char", "ja": "ja-char", "en": "en-13a"}

# Han (BMP + extensions), CJK symbols and punctuation, kana, CJK compatibility ideographs,
# half-width katakana; fullwidth ASCII variants are gone after NFKC. Used by the normalisation
# (spaces between two of these go) and by ``ja-char``.
_CJK = (
    "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff65-\uff9f\U00020000-\U0003134f"
)
# sacrebleu's ``TokenizerZh._is_chinese_char`` (sacrebleu/tokenizers/tokenizer_zh.py) as code-point
# ranges, exactly as its comparisons behave: its table writes ``u'\u20000'`` and ``u'\u2f800'``
# meaning the supplementary planes, but Python reads those as two-character strings, so the
# ranges that actually apply are U+2001-U+2A6D (general punctuation -- dashes, curly quotes,
# ellipses --, currency, letterlike symbols, arrows, maths ...) and U+2F81-U+2FA1, while
# supplementary-plane Han (Extension B and later) is *not* split. A test compares this class with
# sacrebleu's predicate on every code point.
_ZH_CHINESE = (
    "\u2001-\u2a6d\u2e80-\u2fdf\u2ff0-\u303f\u3100-\u312f\u31a0-\u31ef\u3200-\u4db5"
    "\u4e00-\u9fbb\uf900-\ufa2d\ufa30-\ufa6a\ufa70-\ufad9\ufe10-\ufe1f\ufe30-\ufe4f"
    "\uff00-\uffef"
)
_SPACE_BETWEEN_CJK = re.compile(f"(?<=[{_CJK}])\\s+(?=[{_CJK}])")
_SPACES = re.compile(r"\s+")
# sacrebleu's ``TokenizerRegexp`` rules (tokenizer_re.py), applied in this order by both its
# ``13a`` and ``zh`` tokenizers; copied so that a whole batch can run through each rule at once.
_RULES = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)
# Batches are joined with NUL (kept by NFKC, not whitespace, not touched by any rule, not a digit)
# and split again after the rules.
_SEP = "\x00"
_SPACES_AT_SEP = re.compile(f" ?{_SEP} ?")
_ZH_TOKEN = re.compile(f"[{_ZH_CHINESE}]|[^\\s{_ZH_CHINESE}]+")
_JA_TOKEN = re.compile(f"[{_ZH_CHINESE}{_CJK}]|[^\\s{_ZH_CHINESE}{_CJK}]+")
# SudachiPy refuses inputs over 49,149 bytes; 8,000 characters stay below it even at 4 bytes each.
_SUDACHI_CHUNK = 8000


def normalise(text: str, *, lowercase: bool = False) -> str:
    """The default profile's normalisation (steps 1-3 of the module doc)."""
    text = unicodedata.normalize("NFKC", text)
    text = _SPACES.sub(" ", text).strip()
    text = _SPACE_BETWEEN_CJK.sub("", text)
    return text.lower() if lowercase else text


def normalise_all(texts: Sequence[str], *, lowercase: bool = False) -> list[str]:
    """:func:`normalise` of many texts in a few passes over their concatenation.

    Equal to ``[normalise(t) for t in texts]``: NUL is a starter that never composes, so NFKC of
    the joined text is the join of each text's NFKC, and no whitespace rule crosses it. Texts that
    contain NUL themselves take the one-by-one path.
    """
    if not texts:
        return []
    joined = _SEP.join(texts)
    if joined.count(_SEP) != len(texts) - 1:
        return [normalise(t, lowercase=lowercase) for t in texts]
    joined = unicodedata.normalize("NFKC", joined)
    joined = _SPACES_AT_SEP.sub(_SEP, _SPACES.sub(" ", joined)).strip()
    joined = _SPACE_BETWEEN_CJK.sub("", joined)
    if lowercase:
        joined = joined.lower()
    return joined.split(_SEP)


def _apply_rules(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def _edge_sensitive(text: str) -> bool:
    """A text that starts or ends with ``.`` or ``,``: the rules treat a missing neighbour
    differently from a separator, so such a text is tokenized on its own."""
    return text[:1] in (".", ",") or text[-1:] in (".", ",")


def _rule_tokens(texts: Sequence[str], token: re.Pattern[str] | None) -> list[list[str]]:
    """sacrebleu's regexp rules, then tokens: ``token.findall`` (one token per Chinese character,
    the rest split on whitespace) or a plain whitespace split (``token=None``, 13a).

    Why Chinese characters need no spaces inserted *before* the rules, as ``TokenizerZh`` does:
    the rules look only at ASCII punctuation, digits and their immediate neighbours, and a
    non-ASCII non-digit character is, to every rule, the same neighbour as the space ``TokenizerZh``
    puts around it; so both give the same non-Chinese tokens (the property test checks it).
    """
    split = token.findall if token is not None else str.split
    out: list[list[str] | None] = [None] * len(texts)
    batch = []
    for i, text in enumerate(texts):
        if _edge_sensitive(text):
            out[i] = split(_apply_rules(text))
        else:
            batch.append(i)
    if batch:
        lines = _apply_rules(_SEP.join(texts[i] for i in batch)).split(_SEP)
        for i, line in zip(batch, lines, strict=True):
            out[i] = split(line)
    return out  # type: ignore[return-value]  # every slot filled above


def _tokenize_zh_chars(texts: Sequence[str]) -> list[list[str]]:
    """sacrebleu's ``TokenizerZh`` followed by ``.split()``, on normalised texts."""
    return _rule_tokens(texts, _ZH_TOKEN)


def _tokenize_ja_chars(texts: Sequence[str]) -> list[list[str]]:
    """``zh`` rules with kana and supplementary-plane Han also split into characters."""
    return _rule_tokens(texts, _JA_TOKEN)


def _tokenize_13a(texts: Sequence[str]) -> list[list[str]]:
    """sacrebleu's ``Tokenizer13a`` followed by ``.split()``, on normalised texts (which hold no
    newlines, so its ``-\\n``/``\\n`` replacements have nothing to do); it pads each line with
    spaces, as here."""
    return _rule_tokens([f" {_unescape_13a(t)} " for t in texts], None)


def _unescape_13a(text: str) -> str:
    text = text.replace("<skipped>", "")
    if "&" in text:
        text = text.replace("&quot;", '"').replace("&amp;", "&")
        text = text.replace("&lt;", "<").replace("&gt;", ">")
    return text


@functools.cache
def _jieba() -> Callable[[str], list[str]]:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.lcut


def _tokenize_jieba(text: str) -> list[str]:
    return [word for word in _jieba()(text) if not word.isspace()]


@functools.cache
def _sudachi() -> Callable[[str], list[str]]:
    from sudachipy import Dictionary, SplitMode

    tokenizer = Dictionary(dict="core").tokenizer(mode=SplitMode.A)
    return lambda text: [m.surface() for m in tokenizer.tokenize(text)]


def _tokenize_sudachi(text: str) -> list[str]:
    analyse = _sudachi()
    tokens: list[str] = []
    for start in range(0, len(text), _SUDACHI_CHUNK):
        tokens.extend(
            t for t in analyse(text[start : start + _SUDACHI_CHUNK]) if t and not t.isspace()
        )
    return tokens


def _tokenize_lic(text: str) -> list[str]:
    return text.strip().split(" ")


def _each(tokenize: Callable[[str], list[str]]) -> Callable[[Sequence[str]], list[list[str]]]:
    return lambda texts: [tokenize(t) for t in texts]


# Each tokenizer takes a batch of normalised texts.
_TOKENIZE: dict[str, Callable[[Sequence[str]], list[list[str]]]] = {
    "zh-char": _tokenize_zh_chars,
    "ja-char": _tokenize_ja_chars,
    "zh-jieba": _each(_tokenize_jieba),
    "ja-sudachi": _each(_tokenize_sudachi),
    "en-13a": _tokenize_13a,
}


@dataclass(frozen=True)
class TokenIds:
    """Tokens of many texts as integer ids: text ``i`` is ``ids[sum(lens[:i]):][:lens[i]]``,
    ``vocab[d]`` the token of id ``d`` (ids dense, numbered in order of first appearance)."""

    ids: np.ndarray
    lens: np.ndarray
    vocab: list[str]

    @classmethod
    def from_tokens(cls, tokens: Sequence[Sequence[str]]) -> TokenIds:
        lens = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        index: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        ids = np.fromiter(
            map(index.__getitem__, itertools.chain.from_iterable(tokens)),
            np.int64,
            count=int(lens.sum()),
        )
        return cls(ids, lens, list(index))

    def tokens(self) -> list[list[str]]:
        """The token lists again."""
        flat = np.array(self.vocab + [""], dtype=object)[self.ids].tolist()
        ends = np.cumsum(self.lens).tolist()
        return [flat[e - n : e] for e, n in zip(ends, self.lens.tolist(), strict=True)]


def _tokenizer_label(name: str) -> str:
    if name == "zh-jieba":
        return f"zh-jieba-{importlib.metadata.version('jieba')}"
    if name == "ja-sudachi":
        sudachi = importlib.metadata.version("SudachiPy")
        core = importlib.metadata.version("sudachidict-core")
        return f"ja-sudachi-A-{sudachi}-core{core}"
    return name


# Compiled path (zh-char, ja-char, en-13a) ---------------------------------------------------
# One pass over the code points of all texts joined by NUL: the profile's whitespace rules,
# sacrebleu's four regexp rules (each a left-to-right scan with re.sub's non-overlapping
# semantics, applied to each text on its own, 13a's padding spaces included) and the token cut
# (one token per character of the "single" table, runs of the other non-space characters). Rules
# only insert spaces, so every token is a substring of its normalised text: tokens are returned
# as spans, and keyed as packed int64 (one or two code points, or up to seven ASCII characters)
# or, past that, by a Python dict of their text. The property tests compare all of it with
# sacrebleu on generated mixed-script text.

_LONG = 1 << 61  # keys of tokens that are not packed: _LONG + index in a dict of their text
_ASCII = 1 << 60  # keys of 3-7 ASCII characters


def _table(ranges: str) -> np.ndarray:
    """A boolean table over all code points from a regexp class written as ``a-b`` ranges."""
    table = np.zeros(0x110000, dtype=np.bool_)
    for at in range(0, len(ranges), 3):
        assert ranges[at + 1] == "-"
        table[ord(ranges[at]) : ord(ranges[at + 2]) + 1] = True
    return table


@functools.cache
def _tables(tokenizer: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(single-character tokens, whitespace as ``\\s``/``str.split`` see it, CJK for the
    normalisation) of a compiled tokenizer."""
    space = np.zeros(0x110000, dtype=np.bool_)
    space[[c for c in range(0x3001) if chr(c).isspace()]] = True
    single = {
        "zh-char": _table(_ZH_CHINESE),
        "ja-char": _table(_ZH_CHINESE) | _table(_CJK),
        "en-13a": np.zeros(0x110000, dtype=np.bool_),
    }[tokenizer]
    return single, space, _table(_CJK)


@functools.cache
def _kernels() -> Any:
    import numba

    jit = numba.njit(cache=True, nogil=True)

    @jit
    def normalise(cp, space, cjk):  # type: ignore[no-untyped-def]  # numba types it
        """Steps 2 of the module doc on NFKC'd texts joined by NUL: whitespace runs become one
        space, none at either end, none between two CJK characters."""
        out = np.empty(len(cp), dtype=np.uint32)
        m = 0
        pending = False  # a whitespace run since the last character written in this text
        last = -1  # the last character written in this text (-1: none yet)
        for c in cp:
            if c == 0:
                out[m] = 0
                m += 1
                pending = False
                last = -1
            elif space[c]:
                pending = last >= 0
            else:
                if pending and not (cjk[last] and cjk[c]):
                    out[m] = 32
                    m += 1
                pending = False
                out[m] = c
                m += 1
                last = c
        return out[:m]

    @jit
    def digit(c):  # type: ignore[no-untyped-def]  # numba types it
        return 48 <= c <= 57

    @jit
    def rule(src, src_at, n, kind, dst, dst_at):  # type: ignore[no-untyped-def]  # numba types it
        """One of sacrebleu's ``TokenizerRegexp`` rules over ``src[:n]`` (``re.sub``: leftmost
        match, scanning on after it), carrying each character's position in the text (-1 for
        an inserted space). Returns the length written to ``dst``."""
        m = 0
        i = 0
        while i < n:
            a = src[i]
            if kind == 1:
                # ([\\{-\\~\\[-\\` -\\&\\(-\\+\\:-\\@\\/]) -> " \\1 "
                if (
                    123 <= a <= 126
                    or 91 <= a <= 96
                    or 32 <= a <= 38
                    or 40 <= a <= 43
                    or (58 <= a <= 64)
                    or a == 47
                ):
                    dst[m] = 32
                    dst_at[m] = -1
                    dst[m + 1] = a
                    dst_at[m + 1] = src_at[i]
                    dst[m + 2] = 32
                    dst_at[m + 2] = -1
                    m += 3
                    i += 1
                    continue
            elif i + 1 < n:
                b = src[i + 1]
                hit = False
                if kind == 2:  # ([^0-9])([\\.,]) -> "\\1 \\2 "
                    hit = not digit(a) and (b == 46 or b == 44)
                elif kind == 3:  # ([\\.,])([^0-9]) -> " \\1 \\2"
                    hit = (a == 46 or a == 44) and not digit(b)
                else:  # ([0-9])(-) -> "\\1 \\2 "
                    hit = digit(a) and b == 45
                if hit:
                    if kind == 3:
                        dst[m] = 32
                        dst_at[m] = -1
                        dst[m + 1] = a
                        dst_at[m + 1] = src_at[i]
                        dst[m + 2] = 32
                        dst_at[m + 2] = -1
                        dst[m + 3] = b
                        dst_at[m + 3] = src_at[i + 1]
                    else:
                        dst[m] = a
                        dst_at[m] = src_at[i]
                        dst[m + 1] = 32
                        dst_at[m + 1] = -1
                        dst[m + 2] = b
                        dst_at[m + 2] = src_at[i + 1]
                        dst[m + 3] = 32
                        dst_at[m + 3] = -1
                    m += 4
                    i += 2
                    continue
            dst[m] = a
            dst_at[m] = src_at[i]
            m += 1
            i += 1
        return m

    @jit
    def key(cp, start, length):  # type: ignore[no-untyped-def]  # numba types it
        """The packed key of a token, -1 when it does not pack."""
        if length == 1:
            return np.int64(cp[start])
        if length == 2:
            return np.int64(cp[start] + 1) | (np.int64(cp[start + 1] + 1) << 21)
        if length <= 7:
            k = np.int64(_ASCII)
            for j in range(length):
                c = cp[start + j]
                if c >= 128:
                    return np.int64(-1)
                k |= np.int64(c + 1) << (8 * j)
            return k
        return np.int64(-1)

    @jit
    def cut(cp, single, space, pad, n_texts):  # type: ignore[no-untyped-def]  # numba types it
        """Tokens of every text: (start, length, packed key) per token, tokens per text."""
        starts = np.empty(len(cp), dtype=np.int64)
        lengths = np.empty(len(cp), dtype=np.int64)
        keys = np.empty(len(cp), dtype=np.int64)
        counts = np.zeros(n_texts, dtype=np.int64)
        longest = 0
        run = 0
        for c in cp:
            run = 0 if c == 0 else run + 1
            longest = max(longest, run)
        size = 24 * (longest + 2)  # rule 1 at most triples a text, the others double it
        buf_a = np.empty(size, dtype=np.uint32)
        at_a = np.empty(size, dtype=np.int64)
        buf_b = np.empty(size, dtype=np.uint32)
        at_b = np.empty(size, dtype=np.int64)
        t = 0
        text = 0
        begin = 0
        for end in range(len(cp) + 1):
            if end < len(cp) and cp[end] != 0:
                continue
            # the text cp[begin:end]: copy it (padded for 13a) and run the rules when one can fire
            n = 0
            if pad:
                buf_a[0] = 32
                at_a[0] = -1
                n = 1
            triggers = False
            for i in range(begin, end):
                c = cp[i]
                buf_a[n] = c
                at_a[n] = i
                n += 1
                if c < 128 and not (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122):
                    triggers = True
            if pad:
                buf_a[n] = 32
                at_a[n] = -1
                n += 1
            src, src_at, dst, dst_at = buf_a, at_a, buf_b, at_b
            if triggers:
                for kind in range(1, 5):
                    n = rule(src, src_at, n, kind, dst, dst_at)
                    src, src_at, dst, dst_at = dst, dst_at, src, src_at
            i = 0
            while i < n:
                c = src[i]
                if space[c]:
                    i += 1
                    continue
                j = i + 1
                if not single[c]:
                    while j < n and not space[src[j]] and not single[src[j]]:
                        j += 1
                first = src_at[i]
                starts[t] = first
                lengths[t] = j - i
                keys[t] = key(cp, first, j - i)
                t += 1
                counts[text] += 1
                i = j
            text += 1
            begin = end + 1
        return starts[:t], lengths[:t], keys[:t], counts

    return SimpleNamespace(normalise=normalise, cut=cut)


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


def _encode_compiled(tokenizer: str, texts: Sequence[str], lowercase: bool) -> TokenIds | None:
    """Token ids of normalised-and-tokenized ``texts``; None when a text holds NUL."""
    joined = _SEP.join(texts)
    if joined.count(_SEP) != len(texts) - 1:
        return None
    single, space, cjk = _tables(tokenizer)
    k = _kernels()
    cp = k.normalise(_codes(unicodedata.normalize("NFKC", joined)), space, cjk)
    if lowercase or tokenizer == "en-13a":
        joined = cp.tobytes().decode("utf-32-le")
        if lowercase:
            joined = joined.lower()
        if tokenizer == "en-13a":
            joined = _unescape_13a(joined)
        cp = _codes(joined)
    starts, lengths, keys, counts = k.cut(cp, single, space, tokenizer == "en-13a", len(texts))
    text: str | None = None
    unpacked = np.flatnonzero(keys < 0)
    if len(unpacked):
        text = cp.tobytes().decode("utf-32-le")
        index: dict[str, int] = {}
        found = [
            index.setdefault(text[s : s + n], len(index))
            for s, n in zip(starts[unpacked].tolist(), lengths[unpacked].tolist(), strict=True)
        ]
        keys[unpacked] = _LONG + np.array(found, dtype=np.int64)
    ids, size = kernels().densify(keys, 0)  # a vocabulary: small, the table grows
    # ids are numbered in order of first appearance: the first token of id d is where the
    # running maximum first reaches d
    first = np.flatnonzero(np.r_[True, ids[1:] > np.maximum.accumulate(ids)[:-1]])[: int(size)]
    if text is None:
        text = cp.tobytes().decode("utf-32-le")
    vocab = [
        text[s : s + n]
        for s, n in zip(starts[first].tolist(), lengths[first].tolist(), strict=True)
    ]
    return TokenIds(ids, counts, vocab)


_COMPILED = ("zh-char", "ja-char", "en-13a")


@dataclass(frozen=True)
class TextProfile:
    """How text becomes tokens: a profile name, a tokenizer and the case setting."""

    name: str
    tokenizer: str
    lowercase: bool = False

    def __post_init__(self) -> None:
        if self.name not in PROFILES:
            raise ValueError(f"unknown profile {self.name!r}; choose one of {', '.join(PROFILES)}")
        if self.name == "default" and self.tokenizer not in TOKENIZERS:
            raise ValueError(
                f"unknown tokenizer {self.tokenizer!r}; choose one of {', '.join(TOKENIZERS)}"
            )

    def tokenize(self, text: str) -> list[str]:
        """Tokens of one raw text under this profile."""
        return self.tokenize_all([text])[0]

    def tokenize_all(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokens of many raw texts, in a few passes over the batch (identical texts once)."""
        if self.name == "lic":
            return [_tokenize_lic(t) for t in texts]
        if self.tokenizer in _COMPILED:
            return self.encode_all(texts).tokens()
        return self._tokenize_unique(texts)

    def _tokenize_unique(self, texts: Sequence[str]) -> list[list[str]]:
        index: dict[str, int] = {}
        where = [index.setdefault(t, len(index)) for t in texts]
        unique = normalise_all(list(index), lowercase=self.lowercase)
        tokens = _TOKENIZE[self.tokenizer](unique)
        return [tokens[i] for i in where]

    def encode_all(self, texts: Sequence[str]) -> TokenIds:
        """Tokens of many raw texts as integer ids (what the lexical metrics count with); the
        character tokenizers and 13a go through the compiled path."""
        if self.name == "default" and self.tokenizer in _COMPILED:
            found = _encode_compiled(self.tokenizer, texts, self.lowercase)
            if found is not None:
                return found
            return TokenIds.from_tokens(self._tokenize_unique(texts))
        return TokenIds.from_tokens(self.tokenize_all(texts))

    @property
    def signature(self) -> str:
        """``prof:…|tok:…|case:…`` for metric signatures."""
        if self.name == "lic":
            return "prof:lic|tok:split-space|case:mixed"
        case = "lc" if self.lowercase else "mixed"
        return (
            f"prof:default.v{NORMALISATION_VERSION}|tok:{_tokenizer_label(self.tokenizer)}"
            f"|case:{case}"
        )


def text_profile(
    lang: str, profile: str = "default", tokenizer: str | None = None, lowercase: bool = False
) -> TextProfile:
    """The profile for a language: ``tokenizer=None`` picks the language's default tokenizer."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    if profile == "lic":
        return TextProfile("lic", "split-space")
    return TextProfile(profile, tokenizer or DEFAULT_TOKENIZER[lang], lowercase)
