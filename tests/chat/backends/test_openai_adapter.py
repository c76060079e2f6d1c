"""The `openai` adapter and the runtime around it, against a real loopback server."""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import aclosing

import pytest

from chat.backends.httpcommon import STREAM_END_WAIT_S, kept_connections
from chat.models import Backend
from chat.services.generation import (
    BackendError,
    build_request,
    complete_reply,
    complete_reply_sync,
    stream_reply,
)
from tests.chat.fake_openai import FakeOpenAI

GROUNDING = {"knowledge": [["霸王别姬", "导演", "陈凯歌"]], "goal": ["START", "霸王别姬"]}


def _backend(server: FakeOpenAI, **extra: object) -> Backend:
    config = {"base_url": server.base_url, "model": "fake-model", "max_retries": 2}
    config.update(extra.pop("config", {}))
    fields = {"timeout_s": 5.0, "concurrency_limit": 4, **extra}
    return Backend(name=f"openai-{id(config)}", adapter="openai", config=config, **fields)


def _request(backend: Backend, text: str = "你看过《霸王别姬》吗？"):
    return build_request(
        backend=backend,
        skill="knowledge",
        language="zh",
        grounding=GROUNDING,
        history=[("user", "你好"), ("system", "你好呀"), ("user", text)],
    )


async def _collect(backend: Backend, request) -> list[str]:
    async with aclosing(stream_reply(backend=backend, request=request)) as chunks:
        return [chunk async for chunk in chunks]


def test_it_streams_the_reply_token_by_token(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(reply="陈凯歌导演的。", keepalive=True)
    backend = _backend(fake_openai, config={"temperature": 0.3, "max_tokens": 64})
    chunks = asyncio.run(_collect(backend, _request(backend)))
    assert chunks == list("陈凯歌导演的。")

    sent = fake_openai.requests[-1].json
    assert sent["stream"] is True
    assert sent["model"] == "fake-model"
    assert sent["temperature"] == 0.3 and sent["max_tokens"] == 64
    assert sent["messages"][0]["role"] == "system"
    assert "霸王别姬 导演 陈凯歌" in sent["messages"][0]["content"]
    assert [m["role"] for m in sent["messages"][1:]] == ["user", "assistant", "user"]
    assert sent["messages"][-1]["content"] == "你看过《霸王别姬》吗？"


def test_complete_reply_measures_latency_and_first_token(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(reply="abc def ghi", token_delay=0.05)
    backend = _backend(fake_openai)
    reply = complete_reply_sync(backend=backend, request=_request(backend))
    assert reply.text == "abc def ghi"
    assert reply.first_token_ms is not None
    assert reply.latency_ms >= reply.first_token_ms + 80  # two more tokens, 50 ms apart


def test_malformed_chunks_are_skipped_and_reported(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(reply="好的", malformed=1)
    backend = _backend(fake_openai)
    reply = complete_reply_sync(backend=backend, request=_request(backend))
    assert reply.text == "好的"


def test_a_stream_of_only_malformed_chunks_is_a_bad_response(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(tokens=(), malformed=2)
    backend = _backend(fake_openai)
    with pytest.raises(BackendError) as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "bad_response"
    assert "2 malformed chunk(s)" in str(caught.value)


def test_an_error_chunk_in_the_stream_is_reported(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(error_chunk="model overloaded")
    backend = _backend(fake_openai)
    with pytest.raises(BackendError, match="model overloaded") as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "bad_response"


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_failures_are_retried_then_succeed(fake_openai: FakeOpenAI, status: int) -> None:
    fake_openai.set_behaviour(reply="恢复了", fail_times=2, fail_status=status, retry_after=0)
    backend = _backend(fake_openai)
    reply = complete_reply_sync(backend=backend, request=_request(backend))
    assert reply.text == "恢复了"
    assert len(fake_openai.requests) == 3


def test_retries_give_up_after_max_retries(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(fail_times=10, fail_status=429, retry_after=0)
    backend = _backend(fake_openai, config={"max_retries": 1})
    with pytest.raises(BackendError) as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "rate_limited"
    assert "HTTP 429" in str(caught.value)
    assert len(fake_openai.requests) == 2


def test_client_errors_are_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(fail_times=5, fail_status=400)
    backend = _backend(fake_openai)
    with pytest.raises(BackendError) as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "bad_response"
    assert len(fake_openai.requests) == 1


def test_a_failure_after_the_first_chunk_is_not_retried(fake_openai: FakeOpenAI) -> None:
    """Text already streamed must never be duplicated by a retry."""
    fake_openai.set_behaviour(reply="一二三四五", stall_s=3, stall_after_tokens=2)
    backend = _backend(fake_openai, timeout_s=0.5)
    received: list[str] = []

    async def consume() -> None:
        async with aclosing(stream_reply(backend=backend, request=_request(backend))) as chunks:
            async for chunk in chunks:
                received.append(chunk)

    with pytest.raises(BackendError) as caught:
        asyncio.run(consume())
    assert caught.value.kind == "timeout"
    assert received == ["一", "二"]
    assert len(fake_openai.requests) == 1


def test_a_stalled_backend_times_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(stall_s=5)
    backend = _backend(fake_openai, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(BackendError) as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "timeout"
    assert "0.5 s" in str(caught.value)
    assert time.monotonic() - started < 4
    assert len(fake_openai.requests) == 1  # timeouts are not retried


def test_an_unreachable_backend_is_unavailable() -> None:
    server = FakeOpenAI().start()
    url = server.base_url
    server.stop()  # nothing listens on that port any more
    backend = Backend(
        name="gone", adapter="openai", config={"base_url": url, "model": "m", "max_retries": 1}
    )
    with pytest.raises(BackendError) as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "unavailable"
    assert "cannot connect" in str(caught.value)


def test_the_api_key_is_sent_as_bearer_and_never_leaks(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-secret-value-123")
    backend = _backend(fake_openai, api_key_env="FAKE_LLM_KEY")
    complete_reply_sync(backend=backend, request=_request(backend))
    assert fake_openai.requests[-1].headers["authorization"] == "Bearer sk-secret-value-123"

    for status in (401, 500):
        fake_openai.set_behaviour(fail_times=5, fail_status=status, echo_auth=True, retry_after=0)
        with pytest.raises(BackendError) as caught:
            complete_reply_sync(backend=backend, request=_request(backend))
        assert "sk-secret-value-123" not in str(caught.value)
        assert "***" in str(caught.value)  # the server echoed it; we redacted it


def test_a_missing_api_key_variable_is_a_config_error(fake_openai: FakeOpenAI) -> None:
    backend = _backend(fake_openai, api_key_env="NO_SUCH_VARIABLE_XYZ")
    with pytest.raises(BackendError) as caught:
        complete_reply_sync(backend=backend, request=_request(backend))
    assert caught.value.kind == "config"
    assert "NO_SUCH_VARIABLE_XYZ" in str(caught.value)
    assert fake_openai.requests == []


def test_the_concurrency_limit_holds_on_one_event_loop(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(reply="一二三四", token_delay=0.1)
    backend = _backend(fake_openai, concurrency_limit=2)
    request = _request(backend)

    async def many() -> list[str]:
        replies = await asyncio.gather(
            *(complete_reply(backend=backend, request=request) for _ in range(6))
        )
        return [r.text for r in replies]

    assert asyncio.run(many()) == ["一二三四"] * 6
    assert fake_openai.max_in_flight == 2


def test_the_concurrency_limit_holds_across_sync_callers_in_threads(
    fake_openai: FakeOpenAI,
) -> None:
    # Long enough replies that the threads surely overlap on a busy machine.
    fake_openai.set_behaviour(reply="一二三四", token_delay=0.2)
    backend = _backend(fake_openai, concurrency_limit=3)
    request = _request(backend)
    results: list[str] = []
    start = threading.Barrier(8)

    def call() -> None:
        start.wait()
        results.append(complete_reply_sync(backend=backend, request=request).text)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == ["一二三四"] * 8
    assert fake_openai.max_in_flight == 3


def test_script_replies_come_back_as_plain_text_capped(fake_openai: FakeOpenAI) -> None:
    """The text is returned as is (escaping is the page's job) but capped and cleaned."""
    fake_openai.set_behaviour(reply="<script>alert(1)</script>\x00 tail", tokens=None)
    backend = _backend(fake_openai, config={"max_chars": 20})
    reply = complete_reply_sync(backend=backend, request=_request(backend))
    assert reply.text == "<script>alert(1)</sc"
    assert "\x00" not in reply.text


def test_replies_inside_kept_connections_share_one_connection_to_the_model_server(
    fake_openai: FakeOpenAI,
) -> None:
    # As the chat worker runs its replies (vLLM and hosted APIs keep connections alive).
    fake_openai.set_behaviour(reply="陈凯歌导演的。", keep_alive=True)
    backend = _backend(fake_openai)

    async def three_turns() -> list[list[str]]:
        async with kept_connections():
            return [await _collect(backend, _request(backend)) for _ in range(3)]

    assert asyncio.run(three_turns()) == [list("陈凯歌导演的。")] * 3
    assert fake_openai.connections == 1


def test_a_kept_connection_is_reused_when_the_streams_end_arrives_after_done(
    fake_openai: FakeOpenAI,
) -> None:
    # `[DONE]` ends the reply, but the chunked body's last frame may come in a later packet (a
    # real network, a busy machine): the connection goes back to the pool only once it has come.
    fake_openai.set_behaviour(reply="陈凯歌导演的。", keep_alive=True, trailer_delay=0.2)
    backend = _backend(fake_openai)

    async def three_turns() -> list[list[str]]:
        async with kept_connections():
            return [await _collect(backend, _request(backend)) for _ in range(3)]

    assert asyncio.run(three_turns()) == [list("陈凯歌导演的。")] * 3
    assert fake_openai.connections == 1


def test_a_stream_that_goes_on_after_done_is_not_waited_for(fake_openai: FakeOpenAI) -> None:
    # A server that holds its stream open after `[DONE]` costs the reply at most
    # STREAM_END_WAIT_S, and its connection is closed rather than reused.
    fake_openai.set_behaviour(reply="好的。", keep_alive=True, trailer_delay=30.0)
    backend = _backend(fake_openai)

    async def two_turns() -> tuple[list[list[str]], float]:
        started = time.monotonic()
        async with kept_connections():
            replies = [await _collect(backend, _request(backend)) for _ in range(2)]
        return replies, time.monotonic() - started

    replies, elapsed = asyncio.run(two_turns())
    assert replies == [list("好的。")] * 2
    assert elapsed < 2 * STREAM_END_WAIT_S + 5
    assert fake_openai.connections == 2


def test_replies_outside_kept_connections_open_their_own(fake_openai: FakeOpenAI) -> None:
    fake_openai.set_behaviour(reply="好的。", keep_alive=True)
    backend = _backend(fake_openai)

    async def two_turns() -> list[list[str]]:
        return [await _collect(backend, _request(backend)) for _ in range(2)]

    assert asyncio.run(two_turns()) == [list("好的。")] * 2
    assert fake_openai.connections == 2


def test_a_kept_connection_the_server_closed_is_not_reused(fake_openai: FakeOpenAI) -> None:
    # The fake closes every connection after a streamed reply without keep-alive: the pool
    # notices and opens a new one, with no error and no retry spent.
    fake_openai.set_behaviour(reply="好的。")
    backend = _backend(fake_openai, config={"max_retries": 0})

    async def two_turns() -> list[list[str]]:
        async with kept_connections():
            first = await _collect(backend, _request(backend))
            await asyncio.sleep(0.05)
            return [first, await _collect(backend, _request(backend))]

    assert asyncio.run(two_turns()) == [list("好的。")] * 2
    assert fake_openai.connections == 2
