"""`create_rating_job`: the command researchers script studies with."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import RatingJob
from tests.annotation.factories import dialogue_with_turns, experts
from tests.chat.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def test_creates_and_opens_a_job_with_every_dialogue_rated_by_three_experts(capsys):
    campaign = CampaignFactory(name="采集")
    for _ in range(4):
        dialogue_with_turns(campaign=campaign)
    experts(3)
    call_command("create_rating_job", "--name=msde-1", "--campaign=采集", "--rubric=msde", "--open")
    job = RatingJob.objects.get(name="msde-1")
    assert job.status == RatingJob.Status.OPEN and job.rubric.key == "msde"
    assert job.assignments.filter(kind="real").count() == 12
    assert "12 assignment(s)" in capsys.readouterr().out


def test_bad_arguments_are_named():
    CampaignFactory(name="c")
    with pytest.raises(CommandError, match="--campaign: no campaign named 'x'"):
        call_command("create_rating_job", "--name=j", "--campaign=x", "--rubric=msde")
    with pytest.raises(CommandError, match="--rubric"):
        call_command("create_rating_job", "--name=j", "--campaign=c", "--rubric=nope")
    with pytest.raises(CommandError, match="--experts: no user"):
        call_command(
            "create_rating_job", "--name=j", "--campaign=c", "--rubric=msde", "--experts=ghost"
        )
    with pytest.raises(CommandError, match="raters_per_dialogue"):
        call_command("create_rating_job", "--name=j", "--campaign=c", "--rubric=msde", "--raters=0")
    assert not RatingJob.objects.filter(name="j").exists()
