"""The `http` adapter against the reference server printed in docs/backends.md, and others."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chat.models import Backend
from chat.services.generation import BackendError, build_request, complete_reply_sync

DOC = Path(__file__).resolve().parents[3] / "docs" / "backends.md"
GROUNDING = {"knowledge": [["霸王别姬", "导演", "陈凯歌"]], "goal": ["START", "霸王别姬"]}


def _reference_server_code() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("**Reference server**", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def reference_server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "server.py"
    script.write_text(_reference_server_code(), encoding="utf-8")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port)])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("the reference server from docs/backends.md did not start")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/reply"
    finally:
        proc.terminate()
        proc.wait(5)


def _request(backend: Backend):
    return build_request(
        backend=backend,
        skill="knowledge",
        language="zh",
        grounding=GROUNDING,
        history=[("user", "你看过《霸王别姬》吗？")],
    )


def test_the_documented_reference_server_works(reference_server: str) -> None:
    assert len(_reference_server_code().strip().splitlines()) <= 25
    backend = Backend(name="ref", adapter="http", config={"url": reference_server})
    reply = complete_reply_sync(backend=backend, request=_request(backend))
    assert reply.text == "你说：你看过《霸王别姬》吗？。我知道：霸王别姬 导演 陈凯歌。"


class _Recorder:
    """A tiny server answering with a configurable content type and body."""

    def __init__(self, content_type: str, body: bytes, status: int = 200) -> None:
        self.content_type, self.body, self.status = content_type, body, status
        self.received: list[dict] = []
        self.headers: list[dict] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                recorder.received.append(json.loads(self.rfile.read(length)))
                recorder.headers.append(dict(self.headers))
                self.send_response(recorder.status)
                self.send_header("Content-Type", recorder.content_type)
                self.end_headers()
                self.wfile.write(recorder.body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/reply"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", '{"text": "完整回复"}'),
        ("application/x-ndjson", '{"delta": "完整"}\n\n{"delta": "回复"}\n'),
        (
            "text/event-stream",
            'data: {"delta": "完整"}\n\n: ping\n\ndata: {"delta": "回复"}\n\ndata: [DONE]\n\n',
        ),
    ],
)
def test_each_answer_format_is_understood(
    content_type: str, body: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_MODEL_KEY", "k-42")
    server = _Recorder(content_type, body.encode())
    try:
        backend = Backend(
            name="h",
            adapter="http",
            api_key_env="RESEARCH_MODEL_KEY",
            config={"url": server.url, "temperature": 0.5},
        )
        assert complete_reply_sync(backend=backend, request=_request(backend)).text == "完整回复"
        sent = server.received[0]
        assert sent["skill"] == "knowledge" and sent["language"] == "zh"
        assert sent["grounding"] == GROUNDING
        assert sent["history"] == [{"speaker": "user", "text": "你看过《霸王别姬》吗？"}]
        assert "霸王别姬 导演 陈凯歌" in sent["prompt"]
        assert sent["params"] == {"temperature": 0.5}
        assert server.headers[0]["Authorization"] == "Bearer k-42"
    finally:
        server.close()


@pytest.mark.parametrize(
    ("content_type", "body", "status", "message"),
    [
        ("application/json", '{"txt": "x"}', 200, "expected a string in 'text'"),
        ("application/x-ndjson", '{"delta": "a"}\nnot json\n', 200, "not JSON: not json"),
        ("application/json", '{"error": "CUDA out of memory"}', 200, "CUDA out of memory"),
        ("text/html", "<html></html>", 200, "got 'text/html'"),
        ("application/json", '{"error": "bad skill"}', 422, "HTTP 422: bad skill"),
    ],
)
def test_bad_answers_are_reported_clearly(
    content_type: str, body: str, status: int, message: str
) -> None:
    server = _Recorder(content_type, body.encode(), status)
    try:
        backend = Backend(name="h", adapter="http", config={"url": server.url})
        with pytest.raises(BackendError) as caught:
            complete_reply_sync(backend=backend, request=_request(backend))
        assert caught.value.kind == "bad_response"
        assert message in str(caught.value)
    finally:
        server.close()
