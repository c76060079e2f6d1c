"""A fake OpenAI-compatible server on loopback, for tests and benchmarks.

It runs a raw asyncio HTTP/1.1 server in a background thread (no framework to install) and
answers `POST /v1/chat/completions` (streamed SSE when `"stream": true`, a JSON completion
otherwise) and `GET /v1/models`. Every response closes its connection unless `keep_alive` is
set; `connections` counts the connections clients opened.

```python
with FakeOpenAI(reply="你好！", token_delay=0.01) as server:
    backend.config = {"base_url": server.base_url, "model": "fake"}
    server.set_behaviour(fail_times=1, fail_status=429)   # 429, then succeed
    ...
    server.requests[-1].json["messages"], server.requests[-1].headers["authorization"]
    server.max_in_flight
```

Behaviour (all settable with `set_behaviour`, which also resets the failure counters):
- `reply` / `tokens`: the text, streamed one token at a time (Chinese/Japanese by character,
  other text by word with its trailing space) or as the given list of tokens;
- `token_delay`: seconds between tokens; `keepalive`: send an SSE comment before each token;
- `fail_times`, `fail_status`, `retry_after`: answer the next N requests with that HTTP status
  (500, 429, …) and a JSON error, then succeed;
- `malformed`: send this many malformed chunks (broken JSON) among the tokens;
- `stall_s` / `stall_after_tokens`: sleep that long before the headers (`stall_after_tokens`
  None) or after that many tokens;
- `error_chunk`: send an in-stream `{"error": {...}}` chunk instead of tokens;
- `echo_auth`: put the request's Authorization header into error bodies (to prove redaction).

Non-streamed answers (LLM judges) also take:
- `replies`: texts answered in turn, one per request (cycled), instead of `reply`;
  `reply_fn`: a callable `(request json) -> text` (wins over both);
- `finish_reason` (e.g. "length" for a truncated answer), `refusal` (OpenAI's refusal field);
- `logprobs`: `{token text: [(candidate, logprob), …]}`: when the request asks for logprobs,
  every token gets its `top_logprobs` from this map (the token itself at logprob 0 otherwise);
- `latency`: seconds before a non-streamed answer; `reject_response_format`: answer HTTP 400
  to a request carrying `response_format`; `reject_guided_json`: the same for vLLM's
  `guided_json` (an older or non-vLLM server);
- `keep_alive`: keep the connection open after an answer (as vLLM and hosted APIs do; a
  streamed answer is then sent with chunked transfer encoding), so a client reuses it;
- `trailer_delay`: seconds between `data: [DONE]` and the chunked body's last frame (a kept-alive
  stream whose end arrives in a packet of its own, as over a real network or on a busy machine);
- `n` in the request gives that many choices; `usage` counts prompt characters and reply tokens.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from dataclasses import dataclass, field, fields, replace
from typing import Any

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


def split_tokens(text: str) -> list[str]:
    """Characters for CJK text, words (with their trailing space) otherwise."""
    if _CJK.search(text):
        return list(text)
    return re.findall(r"\S+\s*|\s+", text)


@dataclass(frozen=True)
class Behaviour:
    reply: str = "你好！我是测试模型，很高兴和你聊天。"
    tokens: tuple[str, ...] | None = None
    token_delay: float = 0.0
    keepalive: bool = False
    fail_times: int = 0
    fail_status: int = 500
    retry_after: float | None = None
    malformed: int = 0
    stall_s: float = 0.0
    stall_after_tokens: int | None = None
    error_chunk: str | None = None
    echo_auth: bool = False
    replies: tuple[str, ...] | None = None
    reply_fn: Any = None
    finish_reason: str = "stop"
    refusal: str | None = None
    logprobs: dict[str, list[tuple[str, float]]] | None = None
    latency: float = 0.0
    reject_response_format: bool = False
    reject_guided_json: bool = False
    keep_alive: bool = False
    trailer_delay: float = 0.0


@dataclass
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    json: Any
    received_at: float = field(default_factory=time.monotonic)


class FakeOpenAI:
    def __init__(self, **behaviour: Any) -> None:
        self.behaviour = Behaviour(**behaviour)
        self.requests: list[ReceivedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.completed = 0
        self.connections = 0
        self._failures_left = self.behaviour.fail_times
        self._reply_index = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # --- control ---

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def set_behaviour(self, **changes: Any) -> None:
        known = {f.name for f in fields(Behaviour)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"unknown behaviour: {', '.join(sorted(unknown))}")
        with self._lock:
            self.behaviour = replace(self.behaviour, **changes)
            self._failures_left = self.behaviour.fail_times
            self._reply_index = 0

    def reset_stats(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = self.in_flight
            self.completed = 0

    def start(self) -> FakeOpenAI:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=1024)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- HTTP ---

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counted = False
        with self._lock:
            self.connections += 1
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                with self._lock:
                    self.requests.append(request)
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                    counted = True
                    behaviour = self.behaviour
                    fail = self._failures_left > 0
                    if fail:
                        self._failures_left -= 1
                await self._respond(request, behaviour, fail, writer)
                with self._lock:
                    self.in_flight -= 1
                    self.completed += 1
                    counted = False
                if not behaviour.keep_alive or fail:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the server is stopping
        finally:
            if counted:
                with self._lock:
                    self.in_flight -= 1
                    self.completed += 1
            try:
                writer.close()
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass

    async def _read_request(self, reader: asyncio.StreamReader) -> ReceivedRequest | None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = body.decode("utf-8", errors="replace")
        return ReceivedRequest(method=method, path=path, headers=headers, json=payload)

    @staticmethod
    async def _send(
        writer: asyncio.StreamWriter,
        status: int,
        content_type: str,
        body: bytes,
        extra: dict[str, str] | None = None,
        close: bool = True,
    ) -> None:
        reason = {200: "OK", 404: "Not Found", 429: "Too Many Requests"}.get(status, "Error")
        head = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            "Connection: close" if close else "Connection: keep-alive",
        ]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()

    async def _respond(
        self,
        request: ReceivedRequest,
        behaviour: Behaviour,
        fail: bool,
        writer: asyncio.StreamWriter,
    ) -> None:
        if request.method == "GET" and request.path.rstrip("/") == "/v1/models":
            body = {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
            await self._send(writer, 200, "application/json", json.dumps(body).encode())
            return
        if request.method != "POST" or request.path.rstrip("/") != "/v1/chat/completions":
            await self._send(
                writer, 404, "application/json", b'{"error": {"message": "not found"}}'
            )
            return
        if behaviour.stall_s and behaviour.stall_after_tokens is None:
            await asyncio.sleep(behaviour.stall_s)
        if fail:
            message = f"fake failure {behaviour.fail_status}"
            if behaviour.echo_auth:
                message += f" (you sent {request.headers.get('authorization', '')})"
            extra = {}
            if behaviour.retry_after is not None:
                extra["Retry-After"] = f"{behaviour.retry_after:g}"
            body = json.dumps({"error": {"message": message, "type": "server_error"}}).encode()
            await self._send(writer, behaviour.fail_status, "application/json", body, extra)
            return
        tokens = (
            list(behaviour.tokens)
            if behaviour.tokens is not None
            else split_tokens(behaviour.reply)
        )
        model = (
            (request.json or {}).get("model", "fake-model")
            if isinstance(request.json, dict)
            else "fake-model"
        )
        if not (isinstance(request.json, dict) and request.json.get("stream")):
            await self._complete(writer, request, behaviour, tokens, model)
            return
        await self._stream(writer, behaviour, tokens, model, chunked=behaviour.keep_alive)

    async def _complete(
        self,
        writer: asyncio.StreamWriter,
        request: ReceivedRequest,
        behaviour: Behaviour,
        tokens: list[str],
        model: str,
    ) -> None:
        payload = request.json if isinstance(request.json, dict) else {}
        if behaviour.latency:
            await asyncio.sleep(behaviour.latency)
        if behaviour.reject_response_format and "response_format" in payload:
            body = json.dumps({"error": {"message": "response_format is not supported"}})
            await self._send(writer, 400, "application/json", body.encode())
            return
        if behaviour.reject_guided_json and "guided_json" in payload:
            body = json.dumps({"error": {"message": "guided_json is not supported"}})
            await self._send(writer, 400, "application/json", body.encode())
            return
        choices = []
        n = int(payload.get("n") or 1)
        with self._lock:  # a request's n replies are consecutive even under concurrency
            first = self._reply_index
            self._reply_index += n
        for index in range(n):
            if behaviour.reply_fn is not None:
                text = behaviour.reply_fn(payload)
                parts = split_tokens(text)
            elif behaviour.replies:
                text = behaviour.replies[(first + index) % len(behaviour.replies)]
                parts = split_tokens(text)
            else:
                parts = tokens
            message: dict[str, Any] = {"role": "assistant", "content": "".join(parts)}
            if behaviour.refusal is not None:
                message = {"role": "assistant", "content": None, "refusal": behaviour.refusal}
            choice: dict[str, Any] = {
                "index": index,
                "finish_reason": behaviour.finish_reason,
                "message": message,
            }
            if payload.get("logprobs"):
                table = behaviour.logprobs or {}
                choice["logprobs"] = {
                    "content": [
                        {
                            "token": part,
                            "logprob": 0.0,
                            "top_logprobs": [
                                {"token": t, "logprob": lp}
                                for t, lp in table.get(part, [(part, 0.0)])
                            ],
                        }
                        for part in parts
                    ]
                }
            choices.append(choice)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in payload.get("messages", []))
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_chars,
                "completion_tokens": sum(
                    len(split_tokens(c["message"]["content"] or "")) for c in choices
                ),
            },
        }
        await self._send(
            writer,
            200,
            "application/json",
            json.dumps(body, ensure_ascii=False).encode(),
            close=not behaviour.keep_alive,
        )

    async def _stream(
        self,
        writer: asyncio.StreamWriter,
        behaviour: Behaviour,
        tokens: list[str],
        model: str,
        *,
        chunked: bool,
    ) -> None:
        framing = (
            b"Transfer-Encoding: chunked\r\nConnection: keep-alive"
            if chunked
            else b"Connection: close"
        )
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            b"Cache-Control: no-cache\r\n" + framing + b"\r\n\r\n"
        )

        def emit(data: bytes) -> None:
            writer.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            body = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

        emit(chunk({"role": "assistant"}))
        await writer.drain()
        if behaviour.error_chunk is not None:
            error = {"error": {"message": behaviour.error_chunk, "type": "server_error"}}
            emit(f"data: {json.dumps(error)}\n\n".encode())
            if chunked:
                writer.write(b"0\r\n\r\n")
            await writer.drain()
            return
        malformed_left = behaviour.malformed
        for i, token in enumerate(tokens):
            if behaviour.stall_s and behaviour.stall_after_tokens == i:
                await asyncio.sleep(behaviour.stall_s)
            if behaviour.token_delay:
                await asyncio.sleep(behaviour.token_delay)
            if behaviour.keepalive:
                emit(b": keep-alive\n\n")
            if malformed_left:
                emit(b'data: {"choices": [{"delta": {"content": "broken\n\n')
                malformed_left -= 1
            emit(chunk({"content": token}))
            await writer.drain()
        while malformed_left:  # a reply with no tokens at all still gets its broken chunks
            emit(b"data: {not json\n\n")
            malformed_left -= 1
        emit(chunk({}, finish="stop"))
        emit(b"data: [DONE]\n\n")
        if chunked:
            if behaviour.trailer_delay:
                await writer.drain()
                await asyncio.sleep(behaviour.trailer_delay)
            writer.write(b"0\r\n\r\n")
        await writer.drain()
