"""Security hardening for running the platform in public (issue 13, items 3–9)."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.cache import cache
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

from chat.models import Campaign, Participant
from chat.services.replies import ReplyFailed
from chat.views import live
from tests.chat.factories import CampaignFactory
from tests.conftest import REPO_ROOT, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_counters(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.clear()
    yield
    cache.clear()


# --- 3. Login throttling and lockout ------------------------------------------------------------


def _login(client: Client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password})


def test_the_login_page_locks_an_account_after_too_many_wrong_passwords(settings):
    settings.AXES_FAILURE_LIMIT = 5
    make_user("victim", password="right-password-1")
    client = Client()
    for _ in range(4):
        assert _login(client, "victim", "wrong").status_code == 200  # the form, with its error
    locked = _login(client, "victim", "wrong")
    assert locked.status_code == 429
    assert "登录失败次数过多" in locked.content.decode()
    # Locked: even the right password is refused now, with the same clear message.
    again = _login(client, "victim", "right-password-1")
    assert again.status_code == 429 and "_auth_user_id" not in client.session


def test_the_api_token_endpoint_is_throttled_like_the_login_page(settings):
    settings.AXES_FAILURE_LIMIT = 3
    make_user("apiuser", password="right-password-1")
    client = Client()
    url = reverse("api-token")
    for _ in range(2):
        response = client.post(url, {"username": "apiuser", "password": "nope"})
        assert response.status_code == 400
    locked = client.post(url, {"username": "apiuser", "password": "nope"})
    assert locked.status_code == 429 and "登录失败次数过多" in locked.json()["detail"]
    refused = client.post(url, {"username": "apiuser", "password": "right-password-1"})
    assert refused.status_code == 429 and "token" not in refused.json()


def test_one_address_trying_many_accounts_is_locked_too(settings):
    settings.AXES_FAILURE_LIMIT = 3
    client = Client(REMOTE_ADDR="203.0.113.9")
    for name in ("a", "b"):
        assert _login(client, name, "x").status_code == 200
    assert _login(client, "c", "x").status_code == 429
    # Another address is not affected.
    make_user("d", password="right-password-1")
    other = Client(REMOTE_ADDR="198.51.100.7")
    assert _login(other, "d", "right-password-1").status_code == 302


def test_a_successful_login_resets_the_count(settings):
    settings.AXES_FAILURE_LIMIT = 3
    make_user("forgetful", password="right-password-1")
    client = Client()
    for _ in range(2):
        _login(client, "forgetful", "wrong")
    assert _login(client, "forgetful", "right-password-1").status_code == 302
    client.logout()
    for _ in range(2):
        assert _login(client, "forgetful", "wrong").status_code == 200


def test_the_client_address_is_read_from_the_trusted_proxy_only(settings, rf):
    from core.security import client_ip

    request = rf.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.5")
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ip(request) == "10.0.0.1"  # no proxy trusted: a client-set header is ignored
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_ip(request) == "203.0.113.5"  # what our proxy appended, not the forged hop


# --- 4. Backend errors never reach crowdworkers verbatim --------------------------------------


def test_a_backend_error_shows_the_worker_a_neutral_message_and_logs_the_detail(caplog):
    detail = "The model `Qwen2.5-7B-Instruct` does not exist at http://10.0.0.5:8001/v1"
    context = live._failure_context(7, ReplyFailed(kind="config", detail=detail))
    html = render_to_string("chat/live_parts.html#failed", context)
    assert "Qwen2.5" not in html and "10.0.0.5" not in html
    assert "这个模型的配置有误" in html and "重试" in html
    assert detail in caplog.text


# --- 6. A participant is bound to the browser that first joined -----------------------------


def _join_url(campaign: Campaign, query: str = "") -> str:
    return reverse("chat:campaign-join", args=[campaign.invite_token]) + query


def _join(client: Client, campaign: Campaign, worker_id: str, **extra: str):
    return client.post(_join_url(campaign), {"worker_id": worker_id, **extra})


def test_another_browser_needs_the_resume_code_to_become_a_worker():
    campaign = CampaignFactory()
    first = Client()
    assert _join(first, campaign, "w2").status_code == 302
    participant = Participant.objects.get(campaign=campaign, external_id="w2")
    welcome = first.get(reverse("home"))
    assert participant.resume_code in welcome.content.decode()

    attacker = Client()
    refused = _join(attacker, campaign, "w2")
    assert refused.status_code == 403 and "恢复码" in refused.content.decode()
    assert "_auth_user_id" not in attacker.session
    wrong = _join(attacker, campaign, "w2", resume_code="AAAAAAAA")
    assert wrong.status_code == 403 and "_auth_user_id" not in attacker.session

    new_device = Client()
    ok = _join(new_device, campaign, "w2", resume_code=participant.resume_code.lower())
    assert ok.status_code == 302
    assert int(new_device.session["_auth_user_id"]) == participant.user_id

    # The first browser comes back with the invite link and worker id alone (its session over,
    # the binding cookie kept; the test client's logout() would drop every cookie).
    del first.cookies[settings.SESSION_COOKIE_NAME]
    assert _join(first, campaign, "w2").status_code == 302


def test_a_forged_binding_cookie_is_ignored():
    campaign = CampaignFactory()
    _join(Client(), campaign, "w3")
    participant = Participant.objects.get(external_id="w3")
    forger = Client()
    forger.cookies[f"participant-{campaign.pk}"] = str(participant.pk)  # unsigned
    assert _join(forger, campaign, "w3").status_code == 403


# --- 7. Invite links log in on a POST, after confirmation ------------------------------------


def test_opening_an_invite_link_logs_nobody_in_and_keeps_a_researchers_session(researcher):
    campaign = CampaignFactory()
    client = Client()
    client.force_login(researcher)
    page = client.get(_join_url(campaign, "?PROLIFIC_PID=evil"))
    assert page.status_code == 200
    body = page.content.decode()
    assert 'value="evil"' in body and 'id="switch-user"' in body and researcher.username in body
    assert int(client.session["_auth_user_id"]) == researcher.pk
    assert not Participant.objects.exists()


def test_the_join_post_needs_the_csrf_token():
    campaign = CampaignFactory()
    client = Client(enforce_csrf_checks=True)
    assert _join(client, campaign, "w4").status_code == 403
    assert not Participant.objects.exists()
    page = client.get(_join_url(campaign))
    token = page.cookies["csrftoken"].value
    ok = client.post(_join_url(campaign), {"worker_id": "w4", "csrfmiddlewaretoken": token})
    assert ok.status_code == 302 and Participant.objects.filter(external_id="w4").exists()


# --- 8. Hardening: deploy checks, cookies, CSP, worker sessions, join rate limit -----------


def _production_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "SESSION_"))}
    env.update(DEBUG="false", SECRET_KEY=secrets.token_hex(32), ALLOWED_HOSTS="study.example.org")
    return env


def _check_deploy(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env={**_production_env(), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_check_deploy_is_clean_under_the_production_settings():
    result = _check_deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    # Only Django's "middleware missing by path" warnings (core.checks runs them on our classes).
    assert "no issues (3 silenced)" in result.stdout
    assert settings.SILENCED_SYSTEM_CHECKS == ["security.W001", "security.W002", "security.W003"]


def test_check_deploy_still_sees_the_settings_that_depend_on_the_loop_middleware():
    # Django skips its HSTS check when it cannot find SecurityMiddleware by path: ours must not.
    result = _check_deploy(SECURE_HSTS_SECONDS="0")
    assert result.returncode != 0
    assert "security.W004" in result.stderr + result.stdout


def test_production_settings_turn_transport_security_on_by_default():
    script = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE,"
        " s.SESSION_COOKIE_HTTPONLY, s.SECURE_HSTS_SECONDS > 0]))"
    )
    env = {**_production_env(), "DJANGO_SETTINGS_MODULE": "config.settings"}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[true, true, true, true, true]", out.stderr


def test_pages_carry_a_content_security_policy_without_inline_scripts(researcher_client):
    response = researcher_client.get(reverse("home"))
    directives = dict(
        part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";")
    )
    assert directives["script-src"] == "'self'"  # no inline scripts, no eval
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
    body = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", body)  # no inline <script> blocks
    assert not re.search(r"\son[a-z]+=\"", body)  # no inline event handlers
    assert '"allowEval": false' in body


def test_templates_have_no_inline_scripts_or_eval_handlers():
    offenders = []
    for path in REPO_ROOT.glob("*/templates/**/*.html"):
        if ".venv" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"<script(?![^>]*\bsrc=)[^>]*>|\son[a-z]+=\"|hx-on[:-]|js:", text):
            offenders.append(str(path.relative_to(REPO_ROOT)))
    assert offenders == []


def test_a_crowdworker_session_ends_after_the_campaigns_hours():
    campaign = CampaignFactory(worker_session_hours=3)
    client = Client()
    _join(client, campaign, "w5")
    assert client.session.get_expiry_age() == 3 * 3600


def test_the_join_endpoint_is_rate_limited_per_address(settings):
    settings.JOIN_RATE_LIMIT_PER_MINUTE = 3
    campaign = CampaignFactory()
    client = Client(REMOTE_ADDR="203.0.113.20")
    for i in range(3):
        assert _join(client, campaign, f"r{i}").status_code == 302
        client.logout()
    limited = _join(client, campaign, "r9")
    assert limited.status_code == 429 and "过于频繁" in limited.content.decode()
    assert not Participant.objects.filter(external_id="r9").exists()


# --- 9. Malformed input gets a clear 4xx, never a 500 ---------------------------------------


@pytest.mark.parametrize("token", ["abc%00def", "%00"])
def test_a_nul_byte_in_an_invite_token_is_a_400_naming_it(client, token):
    response = client.get(f"/chat/join/{token}/")
    assert response.status_code == 400 and "NUL" in response.content.decode()


@pytest.mark.parametrize("token", ["a" * 200, "ä", "a.b"])
def test_a_malformed_invite_token_is_not_found(client, token):
    assert client.get(f"/chat/join/{token}/").status_code == 404


def test_a_nul_byte_in_a_form_field_is_a_400_naming_the_field(crowdworker_client):
    response = crowdworker_client.post("/chat/work/dialogues/1/send/", {"text": "你好\x00"})
    assert response.status_code == 400 and "text" in response.content.decode()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"name": "x\\u0000y"}', "NUL"),
        ('{"name": "\\ud800"}', "surrogate"),
        ("[" * 5000 + "]" * 5000, "nested deeper"),
    ],
)
def test_malformed_json_on_the_api_is_a_400_naming_what_is_wrong(researcher_client, body, words):
    response = researcher_client.post(
        reverse("api-campaign-list"), body, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert words in response.json()["detail"]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"context": ["\\ud800"], "response": "r"}', "surrogate"),
        ('{"context": ["a\\u0000"], "response": "r"}', "NUL"),
        ('{"context": ' + "[" * 3000 + "]" * 3000 + ', "response": "r"}', "nested deeper"),
    ],
)
def test_malformed_dataset_lines_are_refused_with_the_line(line, words):
    import io

    from chat.importers.errors import DatasetImportError
    from chat.importers.reader import iter_json_lines

    data = io.BytesIO(b'{"context": ["ok"], "response": "r"}\n' + line.encode() + b"\n")
    with pytest.raises(DatasetImportError) as caught:
        list(iter_json_lines(data, max_bytes=10**7))
    assert caught.value.line == 2 and words in str(caught.value)


def test_a_line_or_text_over_the_limits_is_refused_with_the_line(settings):
    import io

    from chat.importers.errors import DatasetImportError
    from chat.importers.reader import iter_json_lines

    settings.IMPORT_MAX_TEXT_CHARS = 100
    long_text = b'{"context": ["' + b"x" * 101 + b'"], "response": "r"}\n'
    with pytest.raises(DatasetImportError) as caught:
        list(iter_json_lines(io.BytesIO(long_text), max_bytes=10**7))
    assert caught.value.line == 1 and "context[0]" in str(caught.value)
    settings.IMPORT_MAX_LINE_BYTES = 50
    with pytest.raises(DatasetImportError, match="IMPORT_MAX_LINE_BYTES"):
        list(iter_json_lines(io.BytesIO(long_text), max_bytes=10**7))


# --- 5. Rubric specs are bounded --------------------------------------------------------------


def _rubric(**question: object) -> dict:
    base = {
        "key": "q1",
        "type": "scale",
        "min": 0,
        "max": 2,
        "level": "dialogue",
        "label": {"en": "Q"},
    }
    return {
        "key": "bounded",
        "version": 1,
        "title": {"en": "T"},
        "questions": [{**base, **question}],
    }


@pytest.mark.parametrize(
    ("question", "path", "words"),
    [
        ({"max": 200000}, "questions[0].max", "between"),
        ({"min": -(10**20), "max": 10**20}, "questions[0].min", "between"),
        ({"min": 0, "max": 101}, "questions[0].max", "at most 101 values"),
        ({"label": {"en": "x" * 501}}, "questions[0].label.en", "longer than 500"),
        (
            {
                "type": "choice",
                "options": [{"label": {"en": f"o{i}"}} for i in range(51)],
                "min": None,
                "max": None,
            },
            "questions[0].options",
            "at most 50 options",
        ),
        (
            {
                "type": "choice",
                "options": [
                    {"label": {"en": "a"}, "score": 0},
                    {"label": {"en": "b"}, "score": 1e20},
                ],
                "min": None,
                "max": None,
            },
            "questions[0].options[1].score",
            "between",
        ),
    ],
)
def test_a_rubric_with_unbounded_numbers_or_texts_is_refused_with_the_path(question, path, words):
    from annotation.rubric_spec import RubricSpecError
    from annotation.services.rubrics import rubric_create

    spec = _rubric(**question)
    spec["questions"][0] = {k: v for k, v in spec["questions"][0].items() if v is not None}
    with pytest.raises(RubricSpecError) as caught:
        rubric_create(spec=spec)
    assert any(p == path and words in m for p, m in caught.value.errors), caught.value.errors


@pytest.mark.parametrize("version", [-1, 0, 10**12, "2", True])
def test_a_nonsense_version_is_refused_not_rewritten(version):
    from annotation.models import Rubric
    from annotation.rubric_spec import RubricSpecError
    from annotation.services.rubrics import rubric_create

    with pytest.raises(RubricSpecError) as caught:
        rubric_create(spec={**_rubric(), "version": version})
    assert caught.value.errors[0][0] == "version"
    assert not Rubric.objects.filter(key="bounded").exists()


def test_a_rubric_at_the_bounds_is_accepted():
    from annotation.services.rubrics import rubric_create

    rubric = rubric_create(spec=_rubric(min=0, max=100))
    assert rubric.version == 1


# --- 10. Long texts: bounded on import, cut on pages ----------------------------------------


def test_the_dataset_page_cuts_long_texts_and_shows_one_sample_whole_on_request(
    researcher_client,
):
    from chat.models import Dataset, Sample, Skill

    skill = Skill.objects.get(key="chitchat")
    dataset = Dataset.objects.create(name="长文本", skill=skill, language="zh", sample_count=1)
    sample = Sample.objects.create(
        dataset=dataset, index=0, skill=skill, context=["长" * 50_000], references=["短"]
    )
    url = reverse("chat:dataset-detail", args=[dataset.pk])
    page = researcher_client.get(url).content.decode()
    assert page.count("长") < 2000 and f"full={sample.pk}" in page
    whole = researcher_client.get(f"{url}?full={sample.pk}").content.decode()
    assert whole.count("长") >= 50_000


def test_a_huge_raters_per_dialogue_is_refused_with_the_field(researcher):
    from annotation.models import RatingJob
    from annotation.services.rating_jobs import RatingJobError, job_create
    from tests.annotation.factories import rubric

    with pytest.raises(RatingJobError) as caught:
        job_create(
            name="太多人",
            campaign=CampaignFactory(),
            rubric=rubric(),
            created_by=researcher,
            raters_per_dialogue=10**9,
        )
    assert caught.value.field == "raters_per_dialogue"
    assert not RatingJob.objects.exists()


def test_a_missing_loop_security_middleware_is_reported_under_core_ids():
    from django.test import override_settings

    from core.checks import check_security_with_loop_middleware

    kept = [p for p in settings.MIDDLEWARE if not p.endswith(".SecurityMiddleware")]
    with override_settings(MIDDLEWARE=kept):
        ids = {message.id for message in check_security_with_loop_middleware(None)}
    assert "core.W001" in ids
