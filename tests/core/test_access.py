import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from rest_framework.request import Request

from core.access import request_user

pytestmark = pytest.mark.django_db

RESEARCHER_PAGES = ["chat:dataset-list", "chat:dataset-upload"]


@pytest.mark.parametrize("name", RESEARCHER_PAGES)
def test_it_forbids_researcher_pages_to_a_crowdworker(crowdworker_client, name):
    response = crowdworker_client.get(reverse(name))
    assert response.status_code == 403


@pytest.mark.parametrize("name", RESEARCHER_PAGES)
def test_it_forbids_researcher_pages_to_an_expert(expert_client, name):
    assert expert_client.get(reverse(name)).status_code == 403


@pytest.mark.parametrize("name", RESEARCHER_PAGES)
def test_it_sends_anonymous_users_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", RESEARCHER_PAGES)
def test_it_serves_researcher_pages_to_a_researcher(researcher_client, name):
    assert researcher_client.get(reverse(name)).status_code == 200


def test_api_refuses_a_crowdworker(crowdworker_client):
    response = crowdworker_client.get(reverse("api-dataset-list"))
    assert response.status_code == 403


def test_api_refuses_anonymous(client):
    assert client.get(reverse("api-dataset-list")).status_code in (401, 403)


def test_api_accepts_a_researcher_token(client, researcher):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=researcher)
    response = client.get(reverse("api-dataset-list"), HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_api_token_endpoint_issues_a_token(client, researcher):
    response = client.post(reverse("api-token"), {"username": "rita", "password": "pw-123456"})
    assert response.status_code == 200
    assert response.json()["token"]


def test_openapi_schema_is_published(client):
    response = client.get(reverse("api-schema"))
    assert response.status_code == 200
    assert b"/api/datasets/" in response.content


def test_openapi_schema_generates_without_warnings(tmp_path):
    """Every endpoint of every app is described: no guessed serializers, no name collisions."""
    from django.core.management import call_command

    call_command("spectacular", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))
    schema = (tmp_path / "schema.yml").read_text()
    for path in ("/api/backends/", "/api/campaigns/", "/api/rating-jobs/", "/api/metric-runs/"):
        assert path in schema


def test_api_docs_page_needs_no_cdn(client):
    response = client.get(reverse("api-docs"))
    assert response.status_code == 200
    assert b"cdn.jsdelivr" not in response.content and b"unpkg.com" not in response.content


def test_staff_admin_passes_every_role_check(db, client):
    from django.contrib.auth.models import User

    admin = User.objects.create_user("boss", password="x", is_staff=True)
    client.force_login(admin)
    assert client.get(reverse("chat:dataset-list")).status_code == 200


def test_request_user_gives_the_signed_in_user_and_refuses_anonymous(rf, researcher):
    signed_in = Request(rf.get("/"))
    signed_in.user = researcher
    assert request_user(signed_in) == researcher
    anonymous = Request(rf.get("/"))
    anonymous.user = AnonymousUser()
    with pytest.raises(PermissionDenied):
        request_user(anonymous)
