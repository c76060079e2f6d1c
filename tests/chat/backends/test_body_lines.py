"""`httpcommon.body_lines`: a streamed body's lines however the network cuts it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from chat.backends.httpcommon import body_lines
from chat.backends.sse import sse_data


class _Content:
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def iter_any(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


class _Response:
    def __init__(self, pieces: list[bytes]) -> None:
        self.content = _Content(pieces)


def _lines(pieces: list[bytes]) -> list[str]:
    async def collect() -> list[str]:
        return [line async for line in body_lines(_Response(pieces))]  # type: ignore[arg-type]  # a stand-in with the one attribute read

    return asyncio.run(collect())


def _events(pieces: list[bytes]) -> list[str]:
    async def collect() -> list[str]:
        return [data async for data in sse_data(body_lines(_Response(pieces)))]  # type: ignore[arg-type]  # a stand-in with the one attribute read

    return asyncio.run(collect())


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_line_end_splits_lines(end: bytes) -> None:
    body = end.join([b"data: a", b"data: b", b"", b"data: c"]) + end
    assert _lines([body]) == ["data: a", "data: b", "", "data: c"]


def test_a_crlf_cut_between_its_two_bytes_is_one_line_end() -> None:
    # Cut right after the CR: a multi-line event must stay one event, not split at a blank line.
    pieces = [b"data: line one\r", b"\ndata: line two\r\n\r", b"\n"]
    assert _events(pieces) == ["line one\nline two"]


def test_a_character_cut_between_pieces_is_decoded_whole() -> None:
    text = "data: 霸王别姬\n\n".encode()
    pieces = [text[:8], text[8:9], text[9:]]  # inside the UTF-8 bytes of 霸
    assert _events(pieces) == ["霸王别姬"]


def test_a_last_line_without_its_end_is_kept() -> None:
    assert _lines([b"a\nb"]) == ["a", "b"]
    assert _lines([b"a\r"]) == ["a"]
