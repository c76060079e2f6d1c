import pytest
from django.utils import timezone

from chat.models import Backend, Campaign, CampaignBackend, Dialogue
from chat.selectors.campaigns import campaign_progress
from chat.services.campaigns import (
    campaign_activate,
    campaign_close,
    campaign_create,
    campaign_set_backends,
    campaign_update,
    completion_for,
    completion_url_with_code,
    default_alias,
)
from chat.services.scenario_assignment import scenario_assign_next
from core.errors import ServiceError
from tests.chat.campaigns.factories import participant, scenario_dataset, study
from tests.chat.factories import BackendFactory, DatasetFactory, SampleFactory, skill

pytestmark = pytest.mark.django_db


def _create(**overrides) -> Campaign:
    arguments = {
        "name": "MSDE 知识对话",
        "mode": Campaign.Mode.INTERACTIVE,
        "skills": ["knowledge"],
        "backends": [BackendFactory(), BackendFactory()],
        "datasets": [scenario_dataset("knowledge", 2)],
        "created_by": None,
    }
    arguments.update(overrides)
    return campaign_create(**arguments)


def _errors(**overrides) -> dict[str, str]:
    before = Campaign.objects.count()
    with pytest.raises(ServiceError) as caught:
        _create(**overrides)
    assert Campaign.objects.count() == before  # nothing half-saved
    return caught.value.errors


def test_it_creates_a_draft_with_msde_defaults_and_blind_aliases_in_order():
    backends = [BackendFactory(), BackendFactory(), BackendFactory()]
    campaign = _create(backends=backends)
    assert campaign.status == Campaign.Status.DRAFT
    assert (campaign.max_turns, campaign.min_turns, campaign.quota_per_cell) == (10, 1, 0)
    aliases = [CampaignBackend.objects.get(campaign=campaign, backend=b).alias for b in backends]
    assert aliases == ["模型 A", "模型 B", "模型 C"]
    assert campaign.acceptability["flag_threshold"] == 5


def test_aliases_can_be_chosen_and_blank_ones_are_filled():
    campaign = _create(aliases=["系统 甲", ""])
    assert sorted(campaign.campaign_backends.values_list("alias", flat=True)) == [
        "模型 A",
        "系统 甲",
    ]
    assert default_alias(25) == "模型 Z" and default_alias(26) == "模型 AA"


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"skills": ["knowledge", "smalltalk"]}, "skills", "未知的技能「smalltalk」"),
        ({"mode": "live"}, "mode", "未知的模式「live」"),
        ({"min_turns": 5, "max_turns": 3}, "min_turns", "最少轮数（5）不能大于最多轮数（3）"),
        ({"max_turns": 0}, "max_turns", "不能小于 1"),
        ({"aliases": ["模型 X", "模型 X"]}, "aliases", "别名「模型 X」重复"),
        ({"completion_url": "javascript:alert(1)"}, "completion_url", "不是有效的 http(s) 网址"),
        ({"quota_per_cell": -1}, "quota_per_cell", "不能小于 0"),
        ({"instructions": {"persona": {"zh-hans": "…"}}}, "instructions", "「persona」不在本活动"),
        ({"instructions": {"knowledge": {"fr": "…"}}}, "instructions", "说明语言「fr」未知"),
        ({"acceptability": {"min_length": 3}}, "acceptability", "未知的验收规则「min_length」"),
        ({"acceptability": {"min_chars": "3"}}, "acceptability", "「min_chars」的类型应为 int"),
        ({"name": " "}, "name", "请填写名称"),
    ],
)
def test_bad_input_is_refused_with_a_message_naming_the_problem(overrides, field, fragment):
    errors = _errors(**overrides)
    assert fragment in errors[field], errors


def test_a_dataset_whose_skill_is_not_in_the_campaign_is_refused():
    errors = _errors(datasets=[scenario_dataset("persona", 1)])
    assert (
        "数据集「" in errors["datasets"] and "「persona」不在本活动的技能中" in errors["datasets"]
    )


def test_a_mixed_dataset_needs_samples_of_a_campaign_skill():
    mixed = DatasetFactory(skill=None)
    SampleFactory(dataset=mixed, skill=skill("chitchat"))
    assert "没有属于本活动技能的样本" in _errors(datasets=[mixed])["datasets"]
    SampleFactory(dataset=mixed, skill=skill("knowledge"))
    assert _create(datasets=[mixed]).datasets.get() == mixed


def test_an_imported_backend_cannot_be_used_in_an_interactive_campaign():
    imported = BackendFactory(adapter=Backend.Adapter.IMPORTED)
    errors = _errors(backends=[imported])
    assert "导入的系统，不能调用" in errors["backends"]
    assert _create(mode=Campaign.Mode.IMPORTED, backends=[imported]).mode == "imported"


def test_every_problem_is_reported_at_once():
    errors = _errors(name="", skills=["nope"], max_turns=0)
    assert set(errors) >= {"name", "skills", "max_turns"}


def test_a_duplicate_name_is_refused():
    _create()
    assert "已有名为「MSDE 知识对话」" in _errors()["name"]


def test_activation_checks_that_workers_can_be_served():
    campaign = _create(datasets=[])
    with pytest.raises(ServiceError) as caught:
        campaign_activate(campaign=campaign)
    assert "请至少选择一个场景数据集" in caught.value.errors["status"]
    campaign_update(campaign=campaign, datasets=[scenario_dataset("knowledge", 1)])
    assert campaign_activate(campaign=campaign).status == Campaign.Status.ACTIVE
    assert campaign_close(campaign=campaign).status == Campaign.Status.CLOSED


def test_an_inactive_backend_blocks_activation():
    campaign = _create(backends=[BackendFactory(active=False, name="旧模型")])
    with pytest.raises(ServiceError) as caught:
        campaign_activate(campaign=campaign)
    assert "模型后端「旧模型」已停用" in caught.value.errors["status"]


def test_update_changes_settings_and_refuses_bad_turn_limits():
    campaign = _create()
    campaign_update(campaign=campaign, max_turns=5, min_turns=2, rate_while_chatting=True)
    campaign.refresh_from_db()
    assert (campaign.max_turns, campaign.min_turns, campaign.rate_while_chatting) == (5, 2, True)
    with pytest.raises(ServiceError) as caught:
        campaign_update(campaign=campaign, min_turns=6)
    assert "最少轮数（6）不能大于最多轮数（5）" in caught.value.errors["min_turns"]
    campaign.refresh_from_db()
    assert campaign.min_turns == 2


def test_setting_backends_keeps_the_aliases_of_kept_backends():
    a, b, c = BackendFactory(), BackendFactory(), BackendFactory()
    campaign = _create(backends=[a, b])
    campaign_set_backends(campaign=campaign, backends=[b, c])
    aliases = dict(campaign.campaign_backends.values_list("backend_id", "alias"))
    assert aliases == {b.pk: "模型 B", c.pk: "模型 A"}
    campaign_set_backends(campaign=campaign, backends=[b, c], aliases=["模型 A", "模型 B"])
    aliases = dict(campaign.campaign_backends.values_list("backend_id", "alias"))
    assert aliases == {b.pk: "模型 A", c.pk: "模型 B"}  # swapped without a collision


def test_a_backend_with_dialogues_cannot_be_removed():
    campaign = study(backends=1)
    dialogue = scenario_assign_next(participant=participant(campaign))
    with pytest.raises(ServiceError) as caught:
        campaign_set_backends(campaign=campaign, backends=[BackendFactory()])
    assert "已有 1 个对话，不能移除" in caught.value.errors["backends"]
    assert campaign.campaign_backends.get().backend == dialogue.backend


def test_progress_counts_each_backend_and_skill_cell():
    campaign = study(backends=2, scenarios={"knowledge": 2, "chitchat": 3})
    workers = [participant(campaign) for _ in range(4)]
    dialogues = [scenario_assign_next(participant=w) for w in workers]
    Dialogue.objects.filter(pk=dialogues[0].pk).update(
        status=Dialogue.Status.ACCEPTED, submitted_at=timezone.now()
    )
    Dialogue.objects.filter(pk=dialogues[1].pk).update(
        status=Dialogue.Status.REJECTED, submitted_at=timezone.now()
    )
    progress = campaign_progress(campaign=campaign)
    assert len(progress.cells) == 4
    assert {c.skill: c.quota for c in progress.cells} == {"knowledge": 2, "chitchat": 3}
    assert (progress.collected, progress.in_progress, progress.rejected) == (1, 2, 1)
    assert progress.quota == 10


def test_completion_is_given_only_to_a_finished_worker_with_the_code_appended():
    campaign = study(
        backends=1,
        scenarios={"knowledge": 1},
        completion_url="https://app.prolific.com/submissions/complete?x=1",
    )
    worker = participant(campaign)
    dialogue = scenario_assign_next(participant=worker)
    assert completion_for(participant=worker) is None  # still chatting
    Dialogue.objects.filter(pk=dialogue.pk).update(
        status=Dialogue.Status.SUBMITTED, submitted_at=timezone.now()
    )
    completion = completion_for(participant=worker)
    assert completion.code == campaign.completion_code
    assert completion.redirect_url == (
        f"https://app.prolific.com/submissions/complete?x=1&cc={campaign.completion_code}"
    )
    worker.refresh_from_db()
    assert worker.finished_at is not None


def test_a_finished_worker_without_completion_url_gets_only_the_code():
    campaign = study(backends=1, scenarios={"knowledge": 1})
    worker = participant(campaign)
    dialogue = scenario_assign_next(participant=worker)
    Dialogue.objects.filter(pk=dialogue.pk).update(
        status=Dialogue.Status.ACCEPTED, submitted_at=timezone.now()
    )
    assert completion_for(participant=worker).redirect_url is None


def test_a_flagged_worker_gets_no_completion_code():
    campaign = study(backends=1, scenarios={"knowledge": 1})
    worker = participant(campaign)
    dialogue = scenario_assign_next(participant=worker)
    Dialogue.objects.filter(pk=dialogue.pk).update(
        status=Dialogue.Status.SUBMITTED, submitted_at=timezone.now()
    )
    worker.flagged = True
    worker.save()
    assert completion_for(participant=worker) is None


def test_the_code_replaces_an_existing_cc_parameter():
    assert (
        completion_url_with_code("https://x.org/done?cc=OLD", "NEW") == "https://x.org/done?cc=NEW"
    )
