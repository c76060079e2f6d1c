import asyncio
import json

import httpx
import pytest

from config.asgi import application


def _get(path: str) -> httpx.Response:
    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get(path)

    return asyncio.run(fetch())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_asgi_app_serves_the_login_page():
    response = _get("/accounts/login/")
    assert response.status_code == 200
    assert "登录" in response.text
    assert 'name="password"' in response.text


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_asgi_app_serves_vendored_htmx():
    response = _get("/static/js/htmx.min.js")
    assert response.status_code == 200
    assert "htmx" in response.text[:200]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_export_under_asgi_sends_its_first_bytes_before_the_last_row_is_read(monkeypatch):
    """Under ASGI a synchronous iterator would be read whole before the first byte (Django's
    "must consume synchronous iterators" warning, an error in this suite). The export streams
    in batches: the first body message leaves while most rows are still unread."""
    from django.test import Client
    from django.urls import reverse

    from chat.models import Sample
    from chat.services import datasets as services
    from core.access import Role
    from tests.chat.factories import DatasetFactory
    from tests.conftest import make_user

    n_samples = 1_500  # three batches of core.http.STREAM_BATCH_LINES
    dataset = DatasetFactory()
    Sample.objects.bulk_create(
        Sample(dataset=dataset, skill=dataset.skill, index=i, external_id=f"s{i}",
               context=["你好"], references=["你好呀"])
        for i in range(n_samples)
    )  # fmt: skip
    client = Client()
    client.force_login(make_user("rita", Role.RESEARCHER))
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()

    read = 0
    export_lines = services.dataset_export_lines

    def counted(**kwargs):
        nonlocal read
        for line in export_lines(**kwargs):
            read += 1
            yield line

    monkeypatch.setattr(services, "dataset_export_lines", counted)
    read_at_first_body: list[int] = []
    body = bytearray()
    status: list[int] = []

    requests = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():
        if requests:
            return requests.pop()
        await asyncio.Event().wait()  # the client stays until Django cancels its listener

    async def send(message):
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message.get("body"):
            if not read_at_first_body:
                read_at_first_body.append(read)
            body.extend(message["body"])

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": reverse("chat:dataset-export", args=[dataset.pk]),
        "raw_path": b"", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"testserver"), (b"cookie", cookie)],
        "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
    }  # fmt: skip
    asyncio.run(application(scope, receive, send))

    assert status == [200]
    lines = bytes(body).decode().splitlines()
    assert len(lines) == read == n_samples
    assert json.loads(lines[-1])["id"] == f"s{n_samples - 1}"
    assert read_at_first_body and read_at_first_body[0] < n_samples
    assert Sample.objects.filter(dataset=dataset).count() == n_samples


def test_a_file_download_streams_in_blocks_and_closes_its_file(tmp_path):
    """Report files and figures go out through `core.http.file_download`: under ASGI a plain
    FileResponse would be read whole into memory first (the warning this suite makes an error)."""
    from core.http import FILE_BLOCK_BYTES, file_download

    path = tmp_path / "report.xlsx"
    data = bytes(range(256)) * (FILE_BLOCK_BYTES // 256 * 2 + 7)
    path.write_bytes(data)
    response = file_download(path, filename="report-1-report.xlsx")

    async def blocks() -> list[bytes]:
        return [block async for block in response.streaming_content]

    parts = asyncio.run(blocks())
    assert response.is_async
    assert [len(part) for part in parts] == [FILE_BLOCK_BYTES, FILE_BLOCK_BYTES, 7 * 256]
    assert b"".join(parts) == data
    assert response["Content-Disposition"] == 'attachment; filename="report-1-report.xlsx"'
    assert response["Content-Length"] == str(len(data))
    response.close()
    assert all(closer.__self__.closed for closer in response._resource_closers)
