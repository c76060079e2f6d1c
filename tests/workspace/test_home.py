import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_researcher_lands_on_the_researcher_home(researcher_client):
    response = researcher_client.get(reverse("home"))
    assert response.status_code == 200
    assert "workspace/home_researcher.html" in [t.name for t in response.templates]


def test_expert_lands_on_the_expert_home(expert_client):
    response = expert_client.get(reverse("home"))
    assert "workspace/home_expert.html" in [t.name for t in response.templates]


def test_crowdworker_lands_on_the_crowdworker_home(crowdworker_client):
    response = crowdworker_client.get(reverse("home"))
    assert "workspace/home_crowdworker.html" in [t.name for t in response.templates]


def test_a_user_without_a_role_is_told_so(db, client):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_user("nobody", password="x"))
    response = client.get(reverse("home"))
    assert response.status_code == 403


def test_login_logs_in_with_a_password(client, researcher):
    response = client.post(reverse("login"), {"username": "rita", "password": "pw-123456"})
    assert response.status_code == 302
    assert response["Location"] == reverse("home")


def test_language_switch_changes_the_interface_language(researcher_client):
    researcher_client.post(reverse("set_language"), {"language": "en", "next": "/"})
    response = researcher_client.get(reverse("home"))
    assert b"Researcher workspace" in response.content
    researcher_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    response = researcher_client.get(reverse("home"))
    assert "研究者工作台" in response.content.decode()
