"""The researcher's review-policy page of a campaign: form, saving, errors, access."""

import pytest
from django.urls import reverse

from annotation.models import Review, ReviewPolicy
from annotation.services.review import review_policy_set, review_submit
from chat.models import Dialogue
from tests.annotation.factories import CampaignFactory, dialogue_with_turns, experts


def _url(campaign):
    return reverse("annotation:review-policy", args=[campaign.pk])


@pytest.mark.django_db
def test_the_page_shows_the_default_policy_the_waiting_dialogues_and_their_reviews(
    researcher_client,
):
    campaign = CampaignFactory(name="知识对话")
    first = dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED)
    second = dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED)
    dialogue_with_turns(campaign=campaign, status=Dialogue.Status.ACCEPTED)
    dialogue_with_turns(status=Dialogue.Status.SUBMITTED)  # another campaign: not counted
    review_policy_set(campaign=campaign, reviewers_per_dialogue=3, decision_rule="majority")
    a, b = experts(2)
    review_submit(dialogue=first, reviewer=a, decision="accept")
    review_submit(dialogue=first, reviewer=b, decision="reject", reasons=["fluent"])

    response = researcher_client.get(_url(campaign))
    html = response.content.decode()
    assert response.status_code == 200
    assert "多数通过" in html and 'value="3"' in html
    assert f'id="waiting-{first.pk}"' in html and f'id="waiting-{second.pk}"' in html
    row = html.split(f'id="waiting-{first.pk}"')[1].split("</tr>")[0]
    assert '<td class="num">2 / 3</td><td class="num">1</td><td class="num">1</td>' in row
    counts = html.split('id="review-counts"')[1].split("</section>")[0]
    assert '<span class="big">2</span> 待审核' in counts
    assert '<span class="big">1</span> 已通过' in counts


@pytest.mark.django_db
def test_a_campaign_without_policy_shows_the_defaults(researcher_client):
    campaign = CampaignFactory()
    html = researcher_client.get(_url(campaign)).content.decode()
    assert "还没有设置审核规则" in html
    assert "任一退回即退回" in html


@pytest.mark.django_db
def test_posting_saves_the_policy_and_the_next_review_follows_it(researcher_client):
    campaign = CampaignFactory()
    dialogue = dialogue_with_turns(campaign=campaign, status=Dialogue.Status.SUBMITTED)
    response = researcher_client.post(
        _url(campaign), {"reviewers_per_dialogue": "3", "decision_rule": "majority"}
    )
    assert response.status_code == 302 and response.url == _url(campaign)
    policy = ReviewPolicy.objects.get(campaign=campaign)
    assert (policy.reviewers_per_dialogue, policy.decision_rule) == (3, "majority")
    a, b = experts(2)
    review_submit(dialogue=dialogue, reviewer=a, decision="accept")
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.SUBMITTED  # one accept of three is not a majority
    review_submit(dialogue=dialogue, reviewer=b, decision="accept")
    dialogue.refresh_from_db()
    assert dialogue.status == Dialogue.Status.ACCEPTED
    # Changing it again updates the one row.
    researcher_client.post(_url(campaign), {"reviewers_per_dialogue": "1", "decision_rule": "all"})
    assert ReviewPolicy.objects.get(campaign=campaign).decision_rule == "all"
    assert ReviewPolicy.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"reviewers_per_dialogue": "0", "decision_rule": "all"}, "每段对话的审核人数："),
        ({"reviewers_per_dialogue": "21", "decision_rule": "all"}, "每段对话的审核人数："),
        ({"reviewers_per_dialogue": "two", "decision_rule": "all"}, "每段对话的审核人数："),
        ({"reviewers_per_dialogue": "3", "decision_rule": "vote"}, "决定规则："),
        ({"reviewers_per_dialogue": "3"}, "决定规则："),
    ],
)
def test_bad_input_is_named_and_nothing_is_saved(researcher_client, data, message):
    campaign = CampaignFactory()
    response = researcher_client.post(_url(campaign), data)
    assert response.status_code == 400
    error_box = response.content.decode().split('id="form-error"')[1].split("</div>")[0]
    assert message in error_box
    assert not ReviewPolicy.objects.exists()


@pytest.mark.django_db
def test_the_service_refuses_too_many_reviewers_with_a_chinese_message():
    from annotation.services.review import ReviewError

    campaign = CampaignFactory()
    with pytest.raises(
        ReviewError, match="reviewers_per_dialogue：每段对话的审核人数必须在 1 到 20"
    ):
        review_policy_set(campaign=campaign, reviewers_per_dialogue=50, decision_rule="all")
    with pytest.raises(ReviewError, match="decision_rule：必须是 all, majority, any_reject 之一"):
        review_policy_set(campaign=campaign, reviewers_per_dialogue=2, decision_rule="vote")
    assert not ReviewPolicy.objects.exists()


@pytest.mark.django_db
def test_experts_and_crowdworkers_get_403_and_anonymous_users_are_sent_to_log_in(
    expert_client, crowdworker_client, client
):
    campaign = CampaignFactory()
    for c in (expert_client, crowdworker_client):
        assert c.get(_url(campaign)).status_code == 403
        post = c.post(_url(campaign), {"reviewers_per_dialogue": "3", "decision_rule": "all"})
        assert post.status_code == 403
    assert client.get(_url(campaign)).status_code == 302
    assert not ReviewPolicy.objects.exists()
    assert not Review.objects.exists()


@pytest.mark.django_db
def test_an_unknown_campaign_is_404(researcher_client):
    assert researcher_client.get("/annotation/campaigns/999999/review-policy/").status_code == 404
