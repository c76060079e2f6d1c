import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from chat.models import Dataset, Sample
from tests.downloads import streamed_bytes

pytestmark = pytest.mark.django_db

GOOD_LINES = [
    {
        "id": "k1",
        "context": ["你喜欢看电影吗？"],
        "response": "喜欢，最近在看《让子弹飞》。",
        "grounding": {
            "knowledge": [["让子弹飞", "导演", "姜文"]],
            "goal": ["START", "让子弹飞", "姜文"],
        },
    },
    {
        "id": "k2",
        "context": ["姜文还导演过什么？"],
        "references": ["《阳光灿烂的日子》。"],
        "grounding": {},
    },
]


def _file(lines: list, name: str = "data.jsonl") -> SimpleUploadedFile:
    body = "\n".join(
        line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines
    )
    return SimpleUploadedFile(name, body.encode("utf-8"), content_type="application/jsonl")


def _form(file: SimpleUploadedFile, name: str = "知识样例") -> dict:
    return {
        "file": file,
        "source_format": "jsonl",
        "name": name,
        "skill": "knowledge",
        "language": "zh",
    }


def test_upload_page_imports_a_good_file(researcher_client):
    response = researcher_client.post(reverse("chat:dataset-upload"), _form(_file(GOOD_LINES)))
    dataset = Dataset.objects.get(name="知识样例")
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:dataset-detail", args=[dataset.pk])
    assert dataset.sample_count == 2
    assert list(dataset.samples.values_list("external_id", flat=True)) == ["k1", "k2"]
    detail = researcher_client.get(response["Location"])
    assert "姜文" in detail.content.decode()


def test_upload_page_refuses_a_malformed_file_naming_the_line_and_stores_nothing(researcher_client):
    bad = [GOOD_LINES[0], GOOD_LINES[1], '{"id": "k3", "context": "not a list", "response": "x"}']
    response = researcher_client.post(reverse("chat:dataset-upload"), _form(_file(bad)))
    assert response.status_code == 400
    page = response.content.decode()
    assert "line 3" in page and "context" in page
    assert Dataset.objects.count() == 0
    assert Sample.objects.count() == 0


def test_an_upload_posted_by_htmx_redirects_the_browser_or_answers_the_feedback_only(
    researcher_client,
):
    url = reverse("chat:dataset-upload")
    bad = [GOOD_LINES[0], '{"id": "k3", "context": "not a list", "response": "x"}']
    refused = researcher_client.post(url, _form(_file(bad)), headers={"HX-Request": "true"})
    assert refused.status_code == 400
    page = refused.content.decode()
    # What the form swaps in: the feedback box and each field's error list (the file input,
    # with its chosen file, is left alone in the browser).
    assert '<div id="import-feedback">' in page and 'id="import-error"' in page
    assert 'hx-select="#import-feedback"' in page and "#field-errors-file" in page
    done = researcher_client.post(url, _form(_file(GOOD_LINES)), headers={"HX-Request": "true"})
    dataset = Dataset.objects.get(name="知识样例")
    assert done.status_code == 200
    assert done["HX-Redirect"] == reverse("chat:dataset-detail", args=[dataset.pk])


def test_upload_page_refuses_a_file_that_is_not_utf8(researcher_client):
    file = SimpleUploadedFile(
        "gbk.jsonl", '{"id": "1", "context": ["你好"], "response": "好"}'.encode("gbk")
    )
    response = researcher_client.post(reverse("chat:dataset-upload"), _form(file))
    assert response.status_code == 400
    assert "UTF-8" in response.content.decode()
    assert Dataset.objects.count() == 0


def test_dataset_detail_pages_samples_for_htmx(researcher_client):
    researcher_client.post(reverse("chat:dataset-upload"), _form(_file(GOOD_LINES)))
    dataset = Dataset.objects.get()
    response = researcher_client.get(
        reverse("chat:dataset-detail", args=[dataset.pk]), HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body and "让子弹飞" in body


def test_export_downloads_generic_jsonl_that_reimports(researcher_client):
    researcher_client.post(reverse("chat:dataset-upload"), _form(_file(GOOD_LINES)))
    dataset = Dataset.objects.get()
    response = researcher_client.get(reverse("chat:dataset-export", args=[dataset.pk]))
    exported = streamed_bytes(response).decode().splitlines()
    assert [json.loads(line)["id"] for line in exported] == ["k1", "k2"]
    again = researcher_client.post(
        reverse("chat:dataset-upload"), _form(_file(exported, "again.jsonl"), name="再导入")
    )
    assert again.status_code == 302
    copy = Dataset.objects.get(name="再导入")
    assert list(copy.samples.values_list("context", "references", "grounding")) == list(
        dataset.samples.values_list("context", "references", "grounding")
    )


def test_api_imports_lists_and_exports(researcher_client):
    response = researcher_client.post(reverse("api-dataset-import"), _form(_file(GOOD_LINES)))
    assert response.status_code == 201, response.content
    pk = response.json()["id"]
    listing = researcher_client.get(reverse("api-dataset-list"), {"skill": "knowledge"}).json()
    assert [d["id"] for d in listing["results"]] == [pk]
    assert (
        researcher_client.get(reverse("api-dataset-list"), {"skill": "persona"}).json()["count"]
        == 0
    )
    samples = researcher_client.get(reverse("api-sample-list", args=[pk])).json()
    assert samples["count"] == 2 and samples["results"][0]["grounding"]["knowledge"][0][2] == "姜文"
    export = researcher_client.get(reverse("api-dataset-export", args=[pk]))
    assert len(streamed_bytes(export).splitlines()) == 2


def test_api_import_error_names_line_and_field(researcher_client):
    bad = [GOOD_LINES[0], '{"id": "k9", "context": ["a"], "response": "b", "grounding": []}']
    response = researcher_client.post(reverse("api-dataset-import"), _form(_file(bad)))
    assert response.status_code == 400
    body = response.json()
    assert body["line"] == 2
    assert body["field"] == "grounding"
    assert Dataset.objects.count() == 0


def test_api_import_refuses_an_unknown_skill(researcher_client):
    form = _form(_file(GOOD_LINES)) | {"skill": "poetry"}
    response = researcher_client.post(reverse("api-dataset-import"), form)
    assert response.status_code == 400
    assert "poetry" in response.json()["detail"]
    assert Dataset.objects.count() == 0
