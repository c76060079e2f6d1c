"""Workspaces: two research groups on one deployment see and change only their own studies.

The matrix below requests every page and API route of the platform as a researcher of
workspace B, with every id in the path naming an object of workspace A (all of A's objects are
created with the same primary key, so any `<int:…>` in any route names one of them): none may
answer it, and nothing of A changes. Lists never show A's objects.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse

from annotation.models import Assignment, GoldItem, RatingImport, RatingJob, Review, Rubric
from chat.models import Backend, Campaign, Dataset, Dialogue, Sample, StaticRun, Vote, VoteSource
from core.access import Role, workspace_objects, workspace_scope
from core.models import AuditEvent, Membership, Workspace, WorkspaceScoped
from judges.models import Judge
from metrics.models import FollowupSelection, MetricRun, Report, TrainedDiscriminator
from tests.annotation.factories import dialogue_with_turns, rubric
from tests.chat.factories import (
    BackendFactory,
    CampaignBackendFactory,
    CampaignFactory,
    DatasetFactory,
    DialogueFactory,
    SampleFactory,
    TurnFactory,
)
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

ID = 777  # every object of workspace A has this primary key
SECRET = "甲组机密"  # in every name of workspace A

OWNED = (
    Backend,
    Dataset,
    Campaign,
    Rubric,
    RatingJob,
    RatingImport,
    MetricRun,
    Report,
    TrainedDiscriminator,
    FollowupSelection,
    Judge,
)
SCOPED_CHILDREN = (Sample, Dialogue, StaticRun, Review, GoldItem, Assignment, VoteSource, Vote)


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def groups(db) -> dict[str, Any]:
    """Workspace A (the migration's default, with a whole study at pk 777) and workspace B."""
    a = Workspace.objects.get()
    ana = make_user("ana", Role.RESEARCHER)  # joins the only workspace, A
    Membership.objects.filter(user=ana).update(role=Membership.Role.OWNER)
    b = Workspace.objects.create(name="乙组")
    ben = make_user("ben", Role.RESEARCHER)  # two workspaces now: joins none by itself
    Membership.objects.create(workspace=b, user=ben, role=Membership.Role.OWNER)
    expert = make_user("erin", Role.EXPERT)
    with workspace_scope(a):
        backend = BackendFactory(pk=ID, name=f"{SECRET}-backend")
        dataset = DatasetFactory(pk=ID, name=f"{SECRET}-dataset")
        SampleFactory(pk=ID, dataset=dataset)
        campaign = CampaignFactory(pk=ID, name=f"{SECRET}-campaign")
        CampaignBackendFactory(campaign=campaign, backend=backend, alias="甲")
        dialogue = DialogueFactory(
            pk=ID, campaign=campaign, backend=backend, status=Dialogue.Status.ACCEPTED
        )
        TurnFactory(dialogue=dialogue, index=0, speaker="user", text=f"{SECRET}-turn")
        TurnFactory(dialogue=dialogue, index=1, speaker="system", text=f"{SECRET}-reply")
        preset = rubric("msde")
        custom = Rubric.objects.create(
            pk=ID, key="secret-rubric", spec=preset.spec, title={"zh-hans": f"{SECRET}-rubric"}
        )
        StaticRun.objects.create(pk=ID, name=f"{SECRET}-static", campaign=campaign, dataset=dataset)
        job = RatingJob.objects.create(
            pk=ID, name=f"{SECRET}-job", campaign=campaign, rubric=custom
        )
        Assignment.objects.create(pk=ID, job=job, dialogue_id=ID, rater=expert)
        GoldItem.objects.create(pk=ID, job=job, dialogue_id=ID, answers=[])
        RatingImport.objects.create(pk=ID, campaign=campaign, rubric=custom, filename=SECRET)
        run = MetricRun.objects.create(pk=ID, name=f"{SECRET}-run", campaign=campaign, metrics=[])
        Report.objects.create(pk=ID, name=f"{SECRET}-report", config={"runs": [run.pk]})
        VoteSource.objects.create(
            pk=ID, campaign=campaign, kind=VoteSource.Kind.IMPORT, label=SECRET
        )
        TrainedDiscriminator.objects.create(pk=ID, name=f"{SECRET}-disc", dataset=dataset)
        FollowupSelection.objects.create(
            pk=ID,
            name=f"{SECRET}-sel",
            job=job,
            dimension="overall",
            model_path="/x",
            language="zh",
        )
        Judge.objects.create(
            pk=ID, key="secret-judge", name=f"{SECRET}-judge", backend=backend, rubric=custom
        )
    return {"a": a, "b": b, "ana": ana, "ben": ben, "backend": backend, "campaign": campaign}


def _routes() -> list[tuple[str, dict[str, str]]]:
    """Every named route of the site (pages and API), with each path argument set to ID."""
    routes: list[tuple[str, dict[str, str]]] = []

    def walk(patterns: list[Any], namespace: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                if entry.namespace == "admin":
                    continue
                walk(
                    entry.url_patterns,
                    f"{namespace}{entry.namespace}:" if entry.namespace else namespace,
                )
            elif isinstance(entry, URLPattern) and entry.name:
                kwargs = {key: str(ID) for key in entry.pattern.regex.groupindex}
                routes.append((f"{namespace}{entry.name}", kwargs))

    walk(get_resolver().url_patterns, "")
    return routes


def _reversible(name: str, kwargs: dict[str, str]) -> str | None:
    try:
        return reverse(name, kwargs=kwargs)
    except NoReverseMatch:  # a converter that takes no number (a token, a language code)
        return None


def _snapshot() -> dict[str, list[tuple[Any, ...]]]:
    return {
        model._meta.label: sorted(
            tuple(str(v) for v in row) for row in model._base_manager.filter(pk=ID).values_list()
        )
        for model in (*OWNED, *SCOPED_CHILDREN)
    }


SKIP = {"logout", "login", "set_language", "workspace-switch", "api-token"}


def test_no_route_lets_workspace_b_read_or_change_workspace_a(groups):
    before = _snapshot()
    ben = _client(groups["ben"])
    answered: list[str] = []
    leaks: list[str] = []
    for name, kwargs in _routes():
        if name.split(":")[-1] in SKIP:
            continue
        url = _reversible(name, kwargs)
        if url is None:
            continue
        for method in ("get", "post"):
            response = getattr(ben, method)(url)
            body = b"".join(response) if response.streaming else response.content
            if SECRET.encode() in body:
                leaks.append(f"{method.upper()} {url} shows A's data ({response.status_code})")
            if kwargs and response.status_code < 300:
                leaks.append(f"{method.upper()} {url} answered {response.status_code}")
            if kwargs and response.status_code == 404:
                answered.append(url)
    assert leaks == []
    assert _snapshot() == before
    # The probe reached A's objects through many routes (a vacuous 0 would prove nothing).
    assert len(answered) > 40


def test_workspace_a_still_sees_its_own_objects(groups):
    ana = _client(groups["ana"])
    for name in ("chat:campaign-detail", "chat:backend-detail", "annotation:job-detail"):
        assert ana.get(reverse(name, args=[ID])).status_code == 200, name
    assert SECRET in ana.get(reverse("chat:campaign-list")).content.decode()
    ben = _client(groups["ben"])
    assert SECRET not in ben.get(reverse("chat:campaign-list")).content.decode()
    assert ben.get(reverse("chat:campaign-detail", args=[ID])).status_code == 404
    api = ben.get(reverse("api-campaign-detail", args=[ID]))
    assert api.status_code == 404


def test_a_random_object_of_b_never_appears_in_a_list_of_a(groups):
    """Property: whatever is in B, every scoped queryset seen from A leaves it out."""
    rng = random.Random(25)
    with workspace_scope(groups["b"]):
        b_backend = BackendFactory(name="乙组-backend")
        b_campaign = CampaignFactory(name="乙组-campaign")
        dialogue_with_turns(campaign=b_campaign)
        DatasetFactory(name="乙组-dataset")
    for model in (*OWNED, *SCOPED_CHILDREN):
        b_rows = list(
            workspace_objects(model, groups["ben"], groups["b"]).values_list("pk", flat=True)
        )
        a_rows = set(
            workspace_objects(model, groups["ana"], groups["a"]).values_list("pk", flat=True)
        )
        for pk in rng.sample(b_rows, min(3, len(b_rows))):
            if model is Rubric and Rubric._base_manager.get(pk=pk).workspace_id is None:
                continue  # a preset: global
            assert pk not in a_rows, (model, pk)
        # A member of B only sees nothing of A, even when asking for A.
        assert (
            not workspace_objects(model, groups["ben"], groups["a"])
            .exclude(**({"workspace__isnull": True} if model is Rubric else {}))
            .exists()
        )
    with workspace_scope(groups["a"], groups["ana"]):
        assert not Backend.objects.filter(pk=b_backend.pk).exists()
        assert Backend.objects.filter(pk=ID).exists()
        assert Rubric.objects.filter(is_preset=True).exists()  # presets are global


def test_every_workspace_owned_model_is_scoped():
    assert all(issubclass(model, WorkspaceScoped) for model in (*OWNED, *SCOPED_CHILDREN))


def test_objects_of_two_workspaces_cannot_be_combined(groups):
    with workspace_scope(groups["b"]):
        b_backend = BackendFactory(name="乙组-judge-backend")
    custom = Rubric._base_manager.get(pk=ID)
    with pytest.raises(ValidationError, match="另一个工作区"):
        Judge.objects.create(key="mixed", name="mixed", backend=b_backend, rubric=custom)
    job = RatingJob._base_manager.get(pk=ID)
    with workspace_scope(groups["b"]):
        campaign_b = CampaignFactory(name="乙组-c2")
    with pytest.raises(ValidationError):
        MetricRun.objects.create(name="x", campaign=campaign_b, static_run_id=ID, metrics=[])
    with pytest.raises(ValidationError):
        StaticRun.objects.create(name="x", campaign=campaign_b, dataset_id=ID)
    with pytest.raises(ValidationError):
        CampaignBackendFactory(campaign=campaign_b, backend=Backend._base_manager.get(pk=ID))
    with pytest.raises(ValidationError):
        FollowupSelection.objects.create(
            name="x", job=job, workspace=groups["b"], dimension="o", model_path="/x", language="zh"
        )


def test_a_viewer_reads_but_cannot_write(groups):
    viewer = make_user("vera", Role.RESEARCHER)
    Membership.objects.create(workspace=groups["a"], user=viewer, role=Membership.Role.VIEWER)
    client = _client(viewer)
    assert client.get(reverse("chat:campaign-detail", args=[ID])).status_code == 200
    assert client.post(reverse("chat:backend-create"), {"name": "v"}).status_code == 403
    assert client.post(reverse("api-backend-list"), {"name": "v"}).status_code == 403


def test_the_switcher_changes_the_workspace_and_hides_with_one(groups):
    ana = _client(groups["ana"])
    assert 'id="workspace-select"' not in ana.get(reverse("home")).content.decode()
    Membership.objects.create(workspace=groups["b"], user=groups["ana"])
    page = ana.get(reverse("home")).content.decode()
    assert 'id="workspace-select"' in page
    assert SECRET in ana.get(reverse("chat:campaign-list")).content.decode()
    ana.post(reverse("workspace-switch"), {"workspace": groups["b"].pk})
    assert SECRET not in ana.get(reverse("chat:campaign-list")).content.decode()
    assert ana.get(reverse("chat:campaign-detail", args=[ID])).status_code == 404
    # Not a member: refused like a workspace that does not exist.
    other = Workspace.objects.create(name="丙组")
    assert ana.post(reverse("workspace-switch"), {"workspace": other.pk}).status_code == 404


def test_creation_in_a_request_lands_in_the_current_workspace_and_is_audited(groups):
    ben = _client(groups["ben"])
    response = ben.post(
        reverse("api-backend-list"),
        {
            "name": "乙组的模型",
            "adapter": "openai",
            "config": {"base_url": "http://127.0.0.1:8000/v1", "model": "qwen"},
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    backend = Backend._base_manager.get(name="乙组的模型")
    assert backend.workspace == groups["b"]
    event = AuditEvent.objects.get(workspace=groups["b"], action="create")
    assert (event.user, event.object_repr) == (groups["ben"], "乙组的模型")
    assert not AuditEvent.objects.filter(workspace=groups["a"]).exists()


def test_a_download_is_an_audited_export(groups):
    ana = _client(groups["ana"])
    response = ana.get(reverse("chat:dataset-export", args=[ID]))
    assert response.status_code == 200
    event = AuditEvent.objects.get(workspace=groups["a"], action="export")
    assert event.user == groups["ana"] and f"/{ID}/" in event.detail["path"]


def test_closing_a_campaign_is_an_audited_event(groups):
    ana = _client(groups["ana"])
    campaign = groups["campaign"]
    ana.post(reverse("chat:campaign-close", args=[campaign.pk]))
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.CLOSED
    assert AuditEvent.objects.filter(
        workspace=groups["a"], user=groups["ana"], action="change", object_id=str(ID)
    ).exists()
    page = ana.get(reverse("workspace-audit"))
    assert page.status_code == 200 and f"{SECRET}-campaign" in page.content.decode()
    # Not an owner of A: no audit page, no members page.
    ben = _client(groups["ben"])
    assert SECRET not in ben.get(reverse("workspace-audit")).content.decode()


def test_owners_manage_members(groups):
    ana = _client(groups["ana"])
    make_user("newbie", Role.RESEARCHER)
    assert (
        ana.post(reverse("workspace-members"), {"username": "newbie", "role": "viewer"}).status_code
        == 302
    )
    assert Membership.objects.get(user__username="newbie", workspace=groups["a"]).role == "viewer"
    refused = ana.post(reverse("workspace-members"), {"username": "nobody", "role": "viewer"})
    assert refused.status_code == 400 and "nobody" in refused.content.decode()
    ana.post(reverse("workspace-members"), {"username": "newbie", "action": "remove"})
    assert not Membership.objects.filter(user__username="newbie", workspace=groups["a"]).exists()
    lonely = ana.post(reverse("workspace-members"), {"username": "ana", "action": "remove"})
    assert lonely.status_code == 400  # a workspace keeps an owner
    viewer = _client(User.objects.get(username="ben"))
    Membership.objects.create(workspace=groups["a"], user=groups["ben"], role="researcher")
    viewer.post(reverse("workspace-switch"), {"workspace": groups["a"].pk})
    assert viewer.get(reverse("workspace-members")).status_code == 403


def test_commands_refuse_a_foreign_object_by_name(groups, tmp_path):
    out = tmp_path / "d.jsonl"
    with pytest.raises(CommandError, match="several workspaces"):
        call_command("export_dataset", "--name", f"{SECRET}-dataset", "--output", str(out))
    with pytest.raises(CommandError):
        call_command(
            "export_dataset",
            "--name",
            f"{SECRET}-dataset",
            "--output",
            str(out),
            "--workspace",
            "乙组",
        )
    call_command(
        "export_dataset",
        "--name",
        f"{SECRET}-dataset",
        "--output",
        str(out),
        "--workspace",
        groups["a"].name,
    )
    assert out.exists()
    with pytest.raises(CommandError, match="no workspace named"):
        call_command("export_dataset", "--name", "x", "--workspace", "没有这个")


def test_staff_see_every_workspace_in_the_admin_and_move_objects_audited(groups):
    staff = make_user("sam", is_staff=True, is_superuser=True)
    client = _client(staff)
    listing = client.get(reverse("admin:chat_backend_changelist"))
    assert f"{SECRET}-backend" in listing.content.decode()
    response = client.post(
        reverse("admin:chat_backend_changelist"),
        {"action": f"move_to_workspace_{groups['b'].pk}", "_selected_action": [ID]},
    )
    assert response.status_code == 302
    assert Backend._base_manager.get(pk=ID).workspace == groups["b"]
    for workspace in (groups["a"], groups["b"]):
        event = AuditEvent.objects.get(workspace=workspace, action="move")
        assert event.user == staff and event.detail == {"from": "默认工作区", "to": "乙组"}


def test_a_name_taken_in_another_workspace_is_a_clear_refusal_not_an_error(groups):
    """Names are unique across the deployment (decision NN): B is told, A's data stays hidden."""
    ben = _client(groups["ben"])
    response = ben.post(
        reverse("api-backend-list"),
        {
            "name": f"{SECRET}-backend",
            "adapter": "openai",
            "config": {"base_url": "http://127.0.0.1:8000/v1", "model": "qwen"},
        },
        content_type="application/json",
    )
    assert response.status_code == 400
    assert Backend._base_manager.get(name=f"{SECRET}-backend").workspace == groups["a"]


def test_an_api_client_names_its_workspace_in_a_header(groups):
    from rest_framework.authtoken.models import Token

    Membership.objects.create(workspace=groups["b"], user=groups["ana"])
    with workspace_scope(groups["b"]):
        BackendFactory(name="乙组-api-backend")
    token = Token.objects.create(user=groups["ana"]).key
    client = Client()

    def names(**headers: str) -> set[str]:
        response = client.get(
            reverse("api-backend-list"), HTTP_AUTHORIZATION=f"Token {token}", **headers
        )
        return {row["name"] for row in response.json()["results"]}

    assert names() == {f"{SECRET}-backend"}  # the first workspace
    assert names(HTTP_X_WORKSPACE=str(groups["b"].pk)) == {"乙组-api-backend"}
    other = Workspace.objects.create(name="丙组")  # not a member: nothing at all
    assert names(HTTP_X_WORKSPACE=str(other.pk)) == set()


def test_a_new_researcher_joins_the_only_workspace_and_none_of_several(db):
    from django.contrib.auth.models import Group

    (only,) = Workspace.objects.all()
    make_user("one", Role.RESEARCHER)
    by_group = User.objects.create_user("two")
    Group.objects.get(name="researcher").user_set.add(by_group)
    make_user("expert-only", Role.EXPERT)
    assert set(only.memberships.values_list("user__username", flat=True)) == {"one", "two"}
    Workspace.objects.create(name="second")
    make_user("three", Role.RESEARCHER)
    assert not Membership.objects.filter(user__username="three").exists()


def test_scoping_a_queryset_runs_no_query_and_leaves_it_unchanged(
    groups, django_assert_num_queries
):
    unscoped = Backend.objects.all()
    with django_assert_num_queries(0):
        scoped = workspace_objects(unscoped, None, groups["b"])
    assert list(scoped) == [] and len(unscoped) == 1


def test_a_researcher_who_also_rates_sees_their_assignments_in_every_workspace(groups):
    """Experts keep today's model in any workspace: a researcher of B who is also an expert,
    assigned a dialogue of A's job, rates it (expert pages and API follow the assignment), while
    A's researcher pages still answer 404."""
    from django.contrib.auth.models import Group

    ben = groups["ben"]
    ben.groups.add(Group.objects.get(name=Role.EXPERT.value))
    with workspace_scope(groups["a"]):
        RatingJob.objects.filter(pk=ID).update(status=RatingJob.Status.OPEN)
        assignment = Assignment.objects.create(job_id=ID, dialogue_id=ID, rater=ben)
    client = _client(ben)
    page = client.get(reverse("annotation:annotate-item", args=[assignment.pk]))
    assert page.status_code == 200
    listed = client.get("/api/assignments/")
    assert listed.status_code == 200
    assert assignment.pk in {a["id"] for a in listed.json()["results"]}
    assert client.get(reverse("annotation:job-detail", args=[ID])).status_code == 404


def test_a_queryset_declared_in_a_lazily_loaded_view_module_is_scoped_per_request(groups):
    """The first request loads a lazy view's module (core.lazy_urls); a queryset declared there
    at import must not keep the workspace of whoever asked first."""
    import sys

    from core.lazy_urls import lazy_path

    assert "tests.core.lazy_scoped_view" not in sys.modules
    view = lazy_path("x/", "tests.core.lazy_scoped_view.backend_names").callback
    with workspace_scope(groups["b"]):
        BackendFactory(name="乙组-backend")
    from django.test import RequestFactory

    from core.access import request_scope

    def names_for(user: User) -> str:
        request = RequestFactory().get("/x/")
        request.user = user
        request.session = {}
        with request_scope(request):
            return view(request).content.decode()

    assert names_for(groups["ana"]) == f"{SECRET}-backend"  # loads the module, in A's scope
    assert names_for(groups["ben"]) == "乙组-backend"


def test_votes_of_a_study_of_a_are_not_listed_or_exported_to_b(groups):
    """The vote API names its study in the query, which the route matrix does not fill in."""
    with workspace_scope(groups["a"]):
        Vote.objects.create(
            pk=ID,
            campaign_id=ID,
            source_id=ID,
            item=f"{SECRET}-item",
            system_a_id=ID,
            system_b=BackendFactory(name="甲组-other"),
            outcome=Vote.Outcome.A,
            voter_kind=Vote.VoterKind.HUMAN,
            voter=f"{SECRET}-voter",
        )
    ben = _client(groups["ben"])
    listed = ben.get(reverse("api-vote-list"), {"study": ID})
    assert listed.status_code == 200 and listed.json()["count"] == 0
    assert ben.get(reverse("api-vote-export"), {"study": ID}).status_code == 404
    ana = _client(groups["ana"])
    assert ana.get(reverse("api-vote-list"), {"study": ID}).json()["count"] == 1
