"""Service messages reach the pages in Chinese; rubric-kernel messages keep their English text
after a Chinese explanation."""

import pytest
from django.utils import translation

from annotation.rubric_spec import AnswerError
from annotation.services.rating_assignments import RatingJobError
from annotation.services.rating_jobs import job_create
from annotation.services.ratings import IncompleteError, RatingRuleError, answer_error_text
from tests.annotation.factories import CampaignFactory, experts, rubric


def test_a_kernel_error_is_prefixed_and_an_app_error_kept():
    kernel = AnswerError("coh: expected a whole number from 0 to 2, got 9")
    assert answer_error_text(kernel) == (
        "评分量表不接受这个答案：coh: expected a whole number from 0 to 2, got 9"
    )
    rule = RatingRuleError("评分任务不在进行中，不能作答")
    assert answer_error_text(rule) == "评分任务不在进行中，不能作答"
    assert answer_error_text(IncompleteError(["coh", "know"])) == "还有未回答的问题：coh、know"


@pytest.mark.django_db
def test_job_errors_name_their_field_and_follow_the_active_language():
    campaign = CampaignFactory()
    kwargs = {
        "campaign": campaign,
        "rubric": rubric("msde"),
        "created_by": None,
        "raters": experts(1),
    }
    with pytest.raises(RatingJobError) as error:
        job_create(name="  ", **kwargs)
    assert str(error.value) == "name：任务名称不能为空" and error.value.field == "name"
    with pytest.raises(RatingJobError) as error:
        job_create(name="j", raters_per_dialogue=0, **kwargs)
    assert error.value.field == "raters_per_dialogue"
    assert str(error.value).startswith("raters_per_dialogue：")
    with translation.override("zh-hans"), pytest.raises(RatingJobError, match="期限至少为 1 小时"):
        job_create(name="j", deadline_hours=0, **kwargs)
