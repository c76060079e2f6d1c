"""The workspace migrations on a deployment with data: everything moves into one default
workspace owned by today's researchers, presets stay global, nothing visible changes."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("core", "0001_roles"),
    ("chat", "0014_campaign_static_answers"),
    ("annotation", "0007_rating_import_job"),
    ("metrics", "0006_followup_selection_scorer_inputs"),
    ("judges", "0002_structured_guided_json"),
]


def _migrate(targets: list[tuple[str, str]]):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_existing_data_moves_into_a_default_workspace_of_todays_researchers():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = _migrate(BEFORE)
    User = old.get_model("auth", "User")
    Group = old.get_model("auth", "Group")
    researcher = User.objects.create(username="old-rita")
    researcher.groups.add(Group.objects.get(name="researcher"))
    User.objects.create(username="old-eddie").groups.add(Group.objects.get(name="expert"))
    backend = old.get_model("chat", "Backend").objects.create(
        name="old-backend", adapter="retrieval"
    )
    campaign = old.get_model("chat", "Campaign").objects.create(name="old-campaign")
    Rubric = old.get_model("annotation", "Rubric")
    custom = Rubric.objects.create(key="old-custom", spec={"questions": []})
    job = old.get_model("annotation", "RatingJob").objects.create(
        name="old-job", campaign=campaign, rubric=custom
    )
    run = old.get_model("metrics", "MetricRun").objects.create(name="old-run", campaign=campaign)

    new = _migrate(latest)
    (workspace,) = new.get_model("core", "Workspace").objects.all()
    members = new.get_model("core", "Membership").objects.filter(workspace=workspace)
    assert {(m.user.username, m.role) for m in members} == {("old-rita", "owner")}
    for label, pk in [
        ("chat.Backend", backend.pk),
        ("chat.Campaign", campaign.pk),
        ("annotation.Rubric", custom.pk),
        ("annotation.RatingJob", job.pk),
        ("metrics.MetricRun", run.pk),
    ]:
        assert new.get_model(label).objects.get(pk=pk).workspace_id == workspace.pk, label
    presets = new.get_model("annotation", "Rubric").objects.filter(is_preset=True)
    assert presets.exists() and not presets.exclude(workspace=None).exists()
