"""Pairwise votes through the study page, the API and the commands; who may use them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from chat.models import Campaign, Vote, VoteSource
from tests.chat.factories import CampaignFactory
from tests.downloads import streamed_bytes

pytestmark = pytest.mark.django_db


def conv(answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": "你是谁？"}, {"role": "assistant", "content": answer}]


RECORDS = [
    {
        "question_id": "q1",
        "model_a": "甲模型",
        "model_b": "乙模型",
        "winner": "model_a",
        "judge": "r1",
        "language": "Chinese",
        "conversation_a": conv("我是 ChatGPT，由 OpenAI 训练。"),
        "conversation_b": conv("我是一个助手。"),
    },
    {
        "question_id": "q2",
        "model_a": "甲模型",
        "model_b": "乙模型",
        "winner": "tie",
        "judge": "r2",
        "voter_kind": "judge",
        "language": "Chinese",
        "conversation_a": conv("你好。"),
        "conversation_b": conv("您好。"),
    },
]
GOOD = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RECORDS)
BAD = GOOD + json.dumps(dict(RECORDS[0], winner="model_c"), ensure_ascii=False) + "\n"


def upload(text: str, name: str = "votes.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/x-ndjson")


@pytest.fixture
def study():
    return CampaignFactory(
        name="偏好研究", mode=Campaign.Mode.IMPORTED, status=Campaign.Status.DRAFT
    )


@pytest.fixture
def api(researcher) -> APIClient:
    client = APIClient()
    client.force_authenticate(researcher)
    return client


# --- pages ----------------------------------------------------------------------------------------


def test_the_study_page_shows_the_votes_panel(researcher_client, study):
    page = researcher_client.get(reverse("chat:campaign-detail", args=[study.pk]))
    html = page.content.decode()
    assert 'id="votes"' in html
    assert reverse("chat:campaign-votes-import", args=[study.pk]) in html
    assert 'id="vote-exports"' not in html  # nothing to export yet


def test_the_panel_uploads_and_reports_a_bad_line_precisely(researcher_client, study):
    url = reverse("chat:campaign-votes-import", args=[study.pk])
    assert researcher_client.get(url).status_code == 200
    form = {"voter_kind": "human", "language": "", "skill": "chitchat"}
    refused = researcher_client.post(url, {**form, "file": upload(BAD)})
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "line 3, field &#x27;winner&#x27;: unknown winner &#x27;model_c&#x27;" in body
    assert Vote.objects.count() == 0 and VoteSource.objects.count() == 0

    done = researcher_client.post(url, {**form, "file": upload(GOOD)})
    assert done.status_code == 302
    assert done["Location"] == reverse("chat:campaign-detail", args=[study.pk])
    assert Vote.objects.filter(campaign=study).count() == 2

    page = researcher_client.get(reverse("chat:campaign-detail", args=[study.pk]))
    html = page.content.decode()
    assert 'id="vote-exports"' in html
    counts = html[html.index('id="vote-counts"') :]
    assert [part.split("<")[0] for part in counts.split('class="num">')[1:4]] == ["1", "1", "1"]


def test_the_panel_refuses_an_upload_into_a_collected_study(researcher_client):
    collected = CampaignFactory(name="采集", mode=Campaign.Mode.INTERACTIVE)
    page = researcher_client.get(reverse("chat:campaign-detail", args=[collected.pk]))
    assert "data-import-form" not in page.content.decode()
    url = reverse("chat:campaign-votes-import", args=[collected.pk])
    form = {"voter_kind": "human", "language": "", "skill": "chitchat", "file": upload(GOOD)}
    refused = researcher_client.post(url, form)
    assert refused.status_code == 400
    assert "field &#x27;campaign&#x27;" in refused.content.decode()
    assert Vote.objects.count() == 0


def test_the_export_links_stream_both_layouts_and_file_types(tmp_path, researcher_client, study):
    call_command("import_votes", str(_file(GOOD, tmp_path / "votes.jsonl")), "--study", study.name)
    url = reverse("chat:campaign-votes-export", args=[study.pk])
    jsonl = researcher_client.get(url + "?format=fastchat&file=jsonl")
    assert jsonl["Content-Type"].startswith("application/x-ndjson")
    assert "attachment" in jsonl["Content-Disposition"]
    first = json.loads(streamed_bytes(jsonl).decode().splitlines()[0])
    assert (first["model_a"], first["winner"], first["language"]) == ("甲模型", "model_a", "zh")
    csv = researcher_client.get(url + "?format=plain&file=csv")
    assert csv["Content-Type"].startswith("text/csv")
    lines = streamed_bytes(csv).decode().splitlines()
    assert lines[0].startswith("item,left,right,winner")
    assert lines[1].startswith("q1,甲模型,乙模型,left")
    assert researcher_client.get(url + "?format=xml").status_code == 404
    assert researcher_client.get(url + "?file=xlsx").status_code == 404


def test_the_leak_page_lists_flagged_votes_with_word_and_reply(tmp_path, researcher_client, study):
    call_command("import_votes", str(_file(GOOD, tmp_path / "votes.jsonl")), "--study", study.name)
    page = researcher_client.get(reverse("chat:campaign-vote-leaks", args=[study.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    rows = html[html.index("<tbody>") : html.index("</tbody>")]
    assert rows.count("<tr>") == 1
    assert "<strong>chatgpt</strong>" in rows
    assert "我是 chatgpt，由 openai 训练。" in rows.casefold()


def test_the_leak_page_paginates(tmp_path, researcher_client, study):
    records = [dict(RECORDS[0], question_id=f"q{i}") for i in range(30)]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    call_command("import_votes", str(_file(text, tmp_path / "votes.jsonl")), "--study", study.name)
    url = reverse("chat:campaign-vote-leaks", args=[study.pk])
    first = researcher_client.get(url).content.decode()
    second = researcher_client.get(url + "?page=2").content.decode()
    assert first.count("<strong>chatgpt</strong>") == 25
    assert second.count("<strong>chatgpt</strong>") == 5


def test_the_identity_word_list_is_edited_on_the_leak_page(researcher_client, study):
    url = reverse("chat:campaign-identity-words", args=[study.pk])
    response = researcher_client.post(url, {"words": "小助手\n\n  ChatGLM  \n"})
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.identity_words == ["小助手", "ChatGLM"]
    page = researcher_client.get(reverse("chat:campaign-vote-leaks", args=[study.pk]))
    assert "小助手\nChatGLM</textarea>" in page.content.decode()
    too_long = researcher_client.post(url, {"words": "x" * 121}, follow=True)
    assert "longer than 120 characters" in too_long.content.decode()
    study.refresh_from_db()
    assert study.identity_words == ["小助手", "ChatGLM"]
    researcher_client.post(url, {"words": ""})
    study.refresh_from_db()
    assert study.identity_words == []


def test_only_researchers_reach_the_vote_pages(crowdworker_client, expert_client, client, study):
    urls = [
        reverse("chat:campaign-votes-import", args=[study.pk]),
        reverse("chat:campaign-votes-export", args=[study.pk]),
        reverse("chat:campaign-vote-leaks", args=[study.pk]),
    ]
    for url in urls:
        assert crowdworker_client.get(url).status_code == 403
        assert expert_client.get(url).status_code == 403
        assert client.get(url).status_code == 302
    words = reverse("chat:campaign-identity-words", args=[study.pk])
    assert expert_client.post(words, {"words": "x"}).status_code == 403
    study.refresh_from_db()
    assert study.identity_words == []


# --- API ------------------------------------------------------------------------------------------


def test_the_api_imports_and_names_the_bad_line(api):
    bad = api.post(
        reverse("api-vote-import"), {"file": upload(BAD), "study": "新研究"}, format="multipart"
    )
    assert bad.status_code == 400
    assert (bad.json()["line"], bad.json()["field"]) == (3, "winner")
    assert not Campaign.objects.filter(name="新研究").exists()
    good = api.post(
        reverse("api-vote-import"),
        {"file": upload(GOOD), "study": "新研究", "voter_kind": "human", "skill": "chitchat"},
        format="multipart",
    )
    assert good.status_code == 201, good.json()
    body = good.json()
    study = Campaign.objects.get(name="新研究")
    assert body == {
        "study": "新研究",
        "study_id": study.pk,
        "source_id": VoteSource.objects.get().pk,
        "votes": 2,
        "dialogues": 4,
        "identity_leaks": 1,
        "systems_created": ["甲模型", "乙模型"],
        "ignored_fields": [],
    }
    unknown = api.post(
        reverse("api-vote-import"),
        {"file": upload(GOOD), "study": "新研究", "voter_kind": "robot"},
        format="multipart",
    )
    assert unknown.status_code == 400 and "voter_kind" in unknown.json()


def test_the_api_lists_votes_with_filters(tmp_path, api, study):
    call_command("import_votes", str(_file(GOOD, tmp_path / "votes.jsonl")), "--study", study.name)
    url = reverse("api-vote-list")
    assert api.get(url).status_code == 400  # the study is required
    listed = api.get(url, {"study": study.pk}).json()
    assert listed["count"] == 2
    first = listed["results"][0]
    assert (first["item"], first["system_a"], first["outcome"], first["identity_leak"]) == (
        "q1",
        "甲模型",
        "a",
        "chatgpt",
    )
    assert first["source_kind"] == "import"

    def items(**params) -> list[str]:
        response = api.get(url, {"study": study.pk, **params})
        assert response.status_code == 200, response.json()
        return [vote["item"] for vote in response.json()["results"]]

    assert items(voter_kind="judge") == ["q2"]
    assert items(identity_leak="true") == ["q1"]
    assert items(identity_leak="false") == ["q2"]
    assert items(voter="r2") == ["q2"]
    assert items(question="nope") == []
    other = CampaignFactory(name="别的研究")
    assert api.get(url, {"study": other.pk}).json()["count"] == 0
    assert api.get(url, {"study": study.pk, "voter_kind": "robot"}).status_code == 400


def test_the_api_exports_both_layouts(tmp_path, api, study):
    call_command("import_votes", str(_file(GOOD, tmp_path / "votes.jsonl")), "--study", study.name)
    url = reverse("api-vote-export")
    jsonl = api.get(url, {"study": study.pk})
    assert jsonl.status_code == 200
    assert jsonl["Content-Type"].startswith("application/x-ndjson")
    assert len(streamed_bytes(jsonl).decode().splitlines()) == 2
    csv = api.get(url, {"study": study.pk, "format": "plain", "file": "csv"})
    assert streamed_bytes(csv).decode().splitlines()[0].startswith("item,left,right,winner")
    assert api.get(url, {"study": study.pk, "format": "xml"}).status_code == 400
    assert api.get(url, {"study": 999999}).status_code == 404
    assert api.get(url).status_code == 400


def test_the_campaign_api_sets_and_validates_identity_words(api, study):
    url = reverse("api-campaign-detail", args=[study.pk])
    response = api.patch(url, {"identity_words": ["小助手", " Bard "]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["identity_words"] == ["小助手", "Bard"]
    study.refresh_from_db()
    assert study.identity_words == ["小助手", "Bard"]
    blank = api.patch(url, {"identity_words": ["ok", "   "]}, format="json")
    assert blank.status_code == 400
    too_many = api.patch(url, {"identity_words": ["w"] * 501}, format="json")
    assert too_many.status_code == 400
    study.refresh_from_db()
    assert study.identity_words == ["小助手", "Bard"]


def test_the_api_refuses_non_researchers(crowdworker, study):
    client = APIClient()
    client.force_authenticate(crowdworker)
    assert client.get(reverse("api-vote-list"), {"study": study.pk}).status_code == 403
    assert client.get(reverse("api-vote-export"), {"study": study.pk}).status_code == 403
    response = client.post(
        reverse("api-vote-import"), {"file": upload(GOOD), "study": "x"}, format="multipart"
    )
    assert response.status_code == 403


# --- commands -------------------------------------------------------------------------------------


def test_the_commands_import_export_and_refuse_with_the_line(tmp_path, study):
    bad = _file(BAD, tmp_path / "bad.jsonl")
    with pytest.raises(CommandError, match=r"line 3, field 'winner'"):
        call_command("import_votes", str(bad), "--study", study.name)
    assert Vote.objects.count() == 0
    call_command("import_votes", str(_file(GOOD, tmp_path / "v.jsonl")), "--study", study.name)
    out = tmp_path / "out.csv"
    call_command(
        "export_votes", "--study", study.name, "--format", "plain", "--csv", "--output", str(out)
    )
    assert out.read_text(encoding="utf-8").splitlines()[1].startswith("q1,甲模型,乙模型,left")
    call_command("import_votes", str(out), "--study", "副本")
    assert Vote.objects.filter(campaign__name="副本").count() == 2
    with pytest.raises(CommandError, match="no study named"):
        call_command("export_votes", "--study", "没有")


def _file(text: str, path: Path) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_vote_pages_in_english_show_no_chinese(tmp_path, researcher_client):
    from tests.core.test_translations import untranslated_text

    study = CampaignFactory(
        name="votes-study", mode=Campaign.Mode.IMPORTED, status=Campaign.Status.DRAFT
    )
    ascii_records = [
        dict(
            RECORDS[0],
            model_a="alpha",
            model_b="beta",
            language="English",
            conversation_a=[
                {"role": "user", "content": "Who are you?"},
                {"role": "assistant", "content": "I am ChatGPT."},
            ],
            conversation_b=[
                {"role": "user", "content": "Who are you?"},
                {"role": "assistant", "content": "An assistant."},
            ],
        )
    ]
    text = "".join(json.dumps(r) + "\n" for r in ascii_records)
    call_command("import_votes", str(_file(text, tmp_path / "v.jsonl")), "--study", study.name)
    researcher_client.post(reverse("set_language"), {"language": "en", "next": "/"})
    for name in ("chat:campaign-votes-import", "chat:campaign-vote-leaks"):
        html = researcher_client.get(reverse(name, args=[study.pk])).content.decode()
        assert '<html lang="en">' in html
        # The default identity words are data: Chinese and Japanese names, shown as they are.
        html = re.sub(r'<details id="default-identity-words">.*?</details>', "", html, flags=re.S)
        assert not untranslated_text(html), untranslated_text(html)
    bad = researcher_client.post(
        reverse("chat:campaign-votes-import", args=[study.pk]),
        {"voter_kind": "human", "skill": "chitchat", "file": upload(BAD)},
    )
    assert not untranslated_text(bad.content.decode())
