import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from chat.models import Campaign, Participant
from tests.chat.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def _join_url(campaign: Campaign) -> str:
    return reverse("chat:campaign-join", args=[campaign.invite_token])


def _join(client, campaign: Campaign, query: str):
    """Open the invite link (a GET shows the filled-in form), then confirm it (the POST)."""
    page = client.get(_join_url(campaign) + query)
    assert page.status_code == 200 and not page.wsgi_request.user.is_authenticated
    form = page.context["form"]
    return client.post(
        _join_url(campaign) + query,
        {"worker_id": form.initial.get("worker_id", ""), "source": page.context["source"]},
    )


def test_an_invite_link_with_a_worker_id_logs_the_worker_in_without_a_password(client):
    campaign = CampaignFactory()
    response = _join(client, campaign, "?worker_id=AB12&source=prolific")
    assert response.status_code == 302
    participant = Participant.objects.get(campaign=campaign)
    assert participant.external_id == "AB12" and participant.source == "prolific"
    assert not participant.user.has_usable_password()
    assert participant.user.groups.filter(name="crowdworker").exists()
    home = client.get(reverse("home"))
    assert "workspace/home_crowdworker.html" in [t.name for t in home.templates]


def test_prolific_parameters_are_understood(client):
    campaign = CampaignFactory()
    _join(client, campaign, "?PROLIFIC_PID=5f1e2d")
    assert Participant.objects.get(campaign=campaign).source == "prolific"


def test_the_same_worker_id_returns_to_the_same_account(client):
    campaign = CampaignFactory()
    _join(client, campaign, "?worker_id=W1")
    client.logout()
    _join(client, campaign, "?worker_id=W1")  # the same browser: no resume code needed
    assert Participant.objects.filter(campaign=campaign).count() == 1
    assert User.objects.filter(participations__campaign=campaign).count() == 1


def test_without_a_worker_id_the_link_asks_for_one(client):
    campaign = CampaignFactory()
    response = client.get(_join_url(campaign))
    assert response.status_code == 200
    assert 'name="worker_id"' in response.content.decode()
    response = client.post(_join_url(campaign), {"worker_id": "typed-id"})
    assert response.status_code == 302
    assert Participant.objects.get(campaign=campaign).external_id == "typed-id"


def test_a_malformed_worker_id_is_refused_and_nothing_is_created(client):
    campaign = CampaignFactory()
    users_before = User.objects.count()
    response = _join(client, campaign, "?worker_id=" + "<script>")
    assert response.status_code == 400
    assert "工作者 ID" in response.content.decode()
    assert "&lt;script&gt;" in response.content.decode()  # echoed back escaped, never as markup
    assert User.objects.count() == users_before
    assert not Participant.objects.exists()


def test_a_closed_campaign_refuses_new_workers(client):
    campaign = CampaignFactory(status=Campaign.Status.CLOSED)
    response = client.get(_join_url(campaign) + "?worker_id=W1")
    assert response.status_code == 410
    assert not Participant.objects.exists()


def test_an_unknown_invite_token_is_404(client):
    assert client.get(reverse("chat:campaign-join", args=["nope"])).status_code == 404
