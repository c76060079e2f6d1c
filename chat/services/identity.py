"""Identity leaks in pairwise votes: a compared reply that names a model or its maker.

Chatbot Arena drops a battle whose replies reveal who answered (FastChat's
``fastchat/serve/monitor/clean_battle_data.py``, ``IDENTITY_WORDS``): the voter may have
preferred a name, not an answer. We flag such votes instead of dropping them, keep them out of
rankings by default, and show the word that matched. The default list below is FastChat's
(English names) plus the Chinese and Japanese names of the same models and makers; a study may
replace it (``Campaign.identity_words``). The compared systems' own names always count.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

#: FastChat's IDENTITY_WORDS (clean_battle_data.py), then zh and ja names of models and makers.
DEFAULT_IDENTITY_WORDS: tuple[str, ...] = (
    "vicuna",
    "lmsys",
    "koala",
    "uc berkeley",
    "open assistant",
    "laion",
    "chatglm",
    "chatgpt",
    "gpt-4",
    "openai",
    "anthropic",
    "claude",
    "bard",
    "palm",
    "lamda",
    "google",
    "gemini",
    "llama",
    "qianwan",
    "qwen",
    "alibaba",
    "mistral",
    "zhipu",
    "keg lab",
    "01.ai",
    "ai2",
    "tülu",
    "tulu",
    "deepseek",
    "baichuan",
    "internlm",
    "moonshot",
    "kimi",
    "ernie",
    "baidu",
    # Chinese
    "通义千问",
    "千问",
    "阿里巴巴",
    "阿里云",
    "文心一言",
    "文心",
    "百度",
    "智谱",
    "清华",
    "深度求索",
    "百川",
    "月之暗面",
    "讯飞星火",
    "科大讯飞",
    "书生",
    "上海人工智能实验室",
    "谷歌",
    "微软",
    # Japanese
    "グーグル",
    "オープンエーアイ",
    "アンソロピック",
    "クロード",
    "ジェミニ",
    "マイクロソフト",
)

#: Limits on a study's own list (a word is matched as written, case- and width-insensitively).
MAX_IDENTITY_WORDS = 500
MAX_IDENTITY_WORD_LENGTH = 120
MIN_SYSTEM_NAME_LENGTH = 4


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


class IdentityMatcher:
    """Finds the first identity word in a text. ASCII words match at word boundaries ("palm"
    is not in "palmtree", "ai2" not in "kai23"); CJK words, which have no spaces, match anywhere."""

    def __init__(self, words: Iterable[str]) -> None:
        folded = sorted({_fold(word).strip() for word in words if word.strip()}, key=len)
        folded.reverse()  # the longest match wins ("open assistant" before "assistant")
        parts = []
        for word in folded:
            escaped = re.escape(word)
            if word.isascii():
                escaped = rf"(?<![0-9a-z]){escaped}(?![0-9a-z])"
            parts.append(escaped)
        self._pattern = re.compile("|".join(parts)) if parts else None

    def find(self, *texts: str) -> str:
        """The first identity word found in any of ``texts`` (folded), or ""."""
        if self._pattern is None:
            return ""
        for text in texts:
            match = self._pattern.search(_fold(text))
            if match:
                return match.group(0)
        return ""


def identity_matcher(*, study_words: Sequence[str], system_names: Iterable[str]) -> IdentityMatcher:
    """The matcher of a study: its own words (or the default list) and the compared systems'
    names (those of at least :data:`MIN_SYSTEM_NAME_LENGTH` characters: a system called "A" or
    "v1" would match ordinary text)."""
    words = list(study_words) if study_words else list(DEFAULT_IDENTITY_WORDS)
    names = [name for name in system_names if len(name.strip()) >= MIN_SYSTEM_NAME_LENGTH]
    return IdentityMatcher([*words, *names])


def clean_identity_words(value: object) -> list[str]:
    """A study's word list as stored, or ValueError naming what is wrong."""
    if not isinstance(value, list):
        raise ValueError("identity words must be a list of strings")
    if len(value) > MAX_IDENTITY_WORDS:
        raise ValueError(f"at most {MAX_IDENTITY_WORDS} identity words")
    words: list[str] = []
    for position, word in enumerate(value, start=1):
        if not isinstance(word, str) or not word.strip():
            raise ValueError(f"identity word {position} is not a non-empty string")
        if len(word) > MAX_IDENTITY_WORD_LENGTH:
            raise ValueError(
                f"identity word {position} is longer than {MAX_IDENTITY_WORD_LENGTH} characters"
            )
        words.append(word.strip())
    return words
