"""REST API of rating jobs (researchers) and of the current expert's assignments and answers."""

from __future__ import annotations

from dataclasses import asdict

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.generics import get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Assignment, GoldItem, JobRater, Rating, RatingJob, Rubric
from annotation.rubric_spec import AnswerError
from annotation.selectors import rating as selectors
from annotation.selectors.pairwise import pairwise_vote_row, pairwise_votes
from annotation.services import quality, ratings
from annotation.services import rating_assignments as assignment_services
from annotation.services import rating_jobs as services
from chat.models import Campaign, Dialogue, StaticRun, Turn
from core.access import IsExpert, request_user
from core.api import (
    LIST_MAX_ITEMS,
    TEXT_MAX_LENGTH,
    BoundedJSONField,
    BoundedJSONObjectField,
    model_bounds,
    refused,
)
from core.errors import RequestParameterError, ServiceError


def _refused_answer(exc: AnswerError) -> ServiceError:
    """This app's refusals are ServiceErrors already (with ``missing`` on submit); a rubric
    kernel's plain AnswerError is given the same shape."""
    return exc if isinstance(exc, ServiceError) else ServiceError(str(exc))


class JobOutput(serializers.ModelSerializer):
    campaign: serializers.SlugRelatedField[Campaign] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    rubric = serializers.SerializerMethodField()
    sample_pairing = serializers.SerializerMethodField()

    class Meta:
        model = RatingJob
        fields = [
            "id",
            "name",
            "mode",
            "campaign",
            "static_run",
            "rubric",
            "raters_per_dialogue",
            "status",
            "quality_settings",
            "deadline_hours",
            "seed",
            "sample_size",
            "sample_seed",
            "sample",
            "sample_pairing",
            "pair_sample_size",
            "created_at",
        ]

    def get_rubric(self, job: RatingJob) -> dict:
        return {"id": job.rubric_id, "key": job.rubric.key, "version": job.rubric.version}

    def get_sample_pairing(self, job: RatingJob) -> dict | None:
        """Dialogues drawn per system and what could not be paired by scenario (null before
        the draw or without sampling)."""
        pairing = selectors.sample_pairing(job)
        if pairing is None:
            return None
        return {
            "per_system": pairing.per_system,
            "unpaired_scenarios": pairing.unpaired_scenarios,
            "short_systems": pairing.short_systems,
        }


class JobListCreateApi(generics.ListAPIView):
    """List rating jobs, or create one (a draft; open it to assign the dialogues)."""

    serializer_class = JobOutput

    class JobCreateInput(serializers.Serializer):
        name = serializers.CharField(**model_bounds(RatingJob, "name"))
        campaign = serializers.PrimaryKeyRelatedField(queryset=Campaign.objects.all())
        static_run = serializers.PrimaryKeyRelatedField(
            queryset=StaticRun.objects.all(), required=False, allow_null=True
        )
        rubric = serializers.PrimaryKeyRelatedField(queryset=Rubric.objects.all())
        raters_per_dialogue = serializers.IntegerField(
            default=3, **model_bounds(RatingJob, "raters_per_dialogue", min_value=1)
        )
        raters = serializers.ListField(
            child=serializers.CharField(**model_bounds(User, "username")),
            max_length=LIST_MAX_ITEMS,
            required=False,
            help_text="usernames; default all experts",
        )
        quality_settings = BoundedJSONObjectField(required=False, max_items=1000)
        deadline_hours = serializers.IntegerField(
            default=72, **model_bounds(RatingJob, "deadline_hours", min_value=1)
        )
        seed = serializers.IntegerField(default=0, **model_bounds(RatingJob, "seed"))
        sample_size = serializers.IntegerField(
            required=False,
            allow_null=True,
            help_text="rate only this many dialogues per system (seed 001: 500 of 1500)",
            **model_bounds(RatingJob, "sample_size", min_value=1),
        )
        sample_seed = serializers.IntegerField(default=0, **model_bounds(RatingJob, "sample_seed"))
        pair_sample_size = serializers.IntegerField(
            required=False,
            allow_null=True,
            help_text="pairwise: ask about only this many comparisons (scenario, system pair), "
            "drawn at random with sample_seed (for the human + judge ratings)",
            **model_bounds(RatingJob, "pair_sample_size", min_value=1),
        )
        allow_below_minimum = serializers.BooleanField(default=False)
        mode = serializers.ChoiceField(
            choices=RatingJob.Mode.choices,
            default=RatingJob.Mode.ABSOLUTE,
            help_text="pairwise: ACUTE-Eval comparison of two dialogues of a scenario; "
            "raters_per_dialogue then counts raters per pair",
        )

    def get_queryset(self):
        return selectors.job_list()

    @extend_schema(request=JobCreateInput, responses={201: JobOutput, 400: refused()})
    def post(self, request: Request) -> Response:
        serializer = self.JobCreateInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        raters = None
        if "raters" in data:
            found = {u.username: u for u in User.objects.filter(username__in=data["raters"])}
            unknown = sorted(set(data["raters"]) - set(found))
            if unknown:
                raise RequestParameterError(f"unknown users {', '.join(unknown)}", field="raters")
            raters = list(found.values())
        job = services.job_create(
            name=data["name"],
            campaign=data["campaign"],
            static_run=data.get("static_run"),
            rubric=data["rubric"],
            raters_per_dialogue=data["raters_per_dialogue"],
            raters=raters,
            quality_settings=data.get("quality_settings"),
            deadline_hours=data["deadline_hours"],
            seed=data["seed"],
            sample_size=data.get("sample_size"),
            sample_seed=data["sample_seed"],
            created_by=request_user(request),
            allow_below_minimum=data["allow_below_minimum"],
            mode=data["mode"],
            pair_sample_size=data.get("pair_sample_size"),
        )
        return Response(JobOutput(job).data, status=status.HTTP_201_CREATED)


class JobDetailApi(APIView):
    """A job; PATCH renames it or changes its deadline; DELETE removes a draft."""

    class JobPatchInput(serializers.Serializer):
        name = serializers.CharField(required=False, **model_bounds(RatingJob, "name"))
        deadline_hours = serializers.IntegerField(
            required=False, **model_bounds(RatingJob, "deadline_hours", min_value=1)
        )

    @extend_schema(responses={200: JobOutput})
    def get(self, request: Request, pk: int) -> Response:
        return Response(JobOutput(get_object_or_404(RatingJob, pk=pk)).data)

    @extend_schema(request=JobPatchInput, responses={200: JobOutput, 400: refused()})
    def patch(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        serializer = self.JobPatchInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = services.job_update(job=job, **serializer.validated_data)
        return Response(JobOutput(job).data)

    @extend_schema(responses={204: None, 400: refused()})
    def delete(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        services.job_delete(job=job)
        return Response(status=status.HTTP_204_NO_CONTENT)


class JobStatusApi(APIView):
    """POST …/open/ assigns the dialogues; POST …/close/ stops taking answers."""

    action = "open"

    @extend_schema(request=None, responses={200: JobOutput, 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        job = services.job_open(job=job) if self.action == "open" else services.job_close(job=job)
        return Response(JobOutput(job).data)


class JobProgressApi(APIView):
    """Progress of the job and per rater."""

    @extend_schema(responses={200: OpenApiResponse(description="progress")})
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        progress = selectors.job_progress(job)
        progress["raters"] = [{**asdict(r), "percent": r.percent} for r in progress["raters"]]
        return Response(progress)


class JobFlagsApi(APIView):
    """Rater-quality flags: timing outliers, patterned answers, gold accuracy, consistency."""

    @extend_schema(responses={200: OpenApiResponse(description="flags")})
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        return Response(
            [
                {
                    "rater": flag.rater,
                    "kind": str(flag.kind),
                    "detail": flag.detail,
                    "unit": flag.unit,
                    "question": flag.question,
                }
                for flag in quality.job_flags(job)
            ]
        )


class JobVotesApi(APIView):
    """A pairwise job's votes (A = the dialogue shown on the left), newest first, with each
    vote's exclusion reason ("" = counted)."""

    @extend_schema(responses={200: OpenApiResponse(description="votes")})
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk, mode=RatingJob.Mode.PAIRWISE)
        return Response([pairwise_vote_row(vote) for vote in pairwise_votes(job)])


class GoldItemApi(APIView):
    """Store a dialogue's known answers as a gold or onboarding item of the job."""

    class GoldItemInput(serializers.Serializer):
        dialogue = serializers.IntegerField(**model_bounds(Dialogue, "id"))
        purpose = serializers.ChoiceField(choices=GoldItem.Purpose.choices)
        answers = serializers.ListField(
            child=BoundedJSONObjectField(max_items=1000), max_length=LIST_MAX_ITEMS
        )

    @extend_schema(request=GoldItemInput, responses={201: None, 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        serializer = self.GoldItemInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        dialogue = get_object_or_404(Dialogue, pk=data["dialogue"])
        item = services.gold_item_set(
            job=job, dialogue=dialogue, purpose=data["purpose"], answers=data["answers"]
        )
        return Response(
            {"id": item.pk, "purpose": item.purpose, "answers": item.answers},
            status=status.HTTP_201_CREATED,
        )


class RaterBlockApi(APIView):
    """POST blocks a rater in the job (their open items go back to the pool); DELETE unblocks."""

    class RaterBlockInput(serializers.Serializer):
        reason = serializers.CharField(**model_bounds(JobRater, "reason"))

    @extend_schema(request=RaterBlockInput, responses={200: None, 400: refused()})
    def post(self, request: Request, pk: int, rater_id: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        rater = get_object_or_404(User, pk=rater_id)
        serializer = self.RaterBlockInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        revoked = assignment_services.rater_block(
            job=job,
            rater=rater,
            reason=serializer.validated_data["reason"],
            by=request_user(request),
        )
        return Response({"state": "blocked", "returned_to_pool": revoked})

    @extend_schema(responses={200: None, 400: refused()})
    def delete(self, request: Request, pk: int, rater_id: int) -> Response:
        job = get_object_or_404(RatingJob, pk=pk)
        rater = get_object_or_404(User, pk=rater_id)
        assignment_services.rater_unblock(job=job, rater=rater, by=request_user(request))
        return Response({"state": "active"})


class AssignmentOutput(serializers.ModelSerializer):
    job: serializers.SlugRelatedField[RatingJob] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )

    class Meta:
        model = Assignment
        fields = [
            "id",
            "job",
            "dialogue",
            "status",
            "order",
            "due_at",
            "started_at",
            "submitted_at",
        ]


class MyAssignmentsApi(generics.ListAPIView):
    """The current expert's active assignments in open jobs, in their order (blind: the
    dialogue id only; open the annotation page or the dialogue API for the text)."""

    permission_classes = [IsExpert]
    serializer_class = AssignmentOutput
    queryset = Assignment.objects.none()  # the schema generator's model hint

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Assignment.objects.none()
        return selectors.rater_assignments(rater=request_user(self.request))


def _my_assignment(request: Request, pk: int) -> Assignment:
    assignment = get_object_or_404(
        Assignment.objects.select_related("job", "dialogue"), pk=pk, job__is_live=False
    )
    ratings.check_assignment_access(assignment=assignment, user=request_user(request))
    return assignment


class RatingSaveApi(APIView):
    """Save (or revise) one answer: `turn` is a turn id (a model turn) for turn-level
    questions. Refused with the precise reason when the rubric does not accept it."""

    permission_classes = [IsExpert]

    class RatingSaveInput(serializers.Serializer):
        question = serializers.CharField(**model_bounds(Rating, "question"))
        # A number, a choice, or a free-text answer (stored in Rating.text, a TextField).
        value = BoundedJSONField(max_items=LIST_MAX_ITEMS, max_chars=TEXT_MAX_LENGTH)
        turn = serializers.IntegerField(required=False, allow_null=True, **model_bounds(Turn, "id"))

    @extend_schema(request=RatingSaveInput, responses={200: None, 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        assignment = _my_assignment(request, pk)
        serializer = self.RatingSaveInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            rating = ratings.rating_save(
                assignment=assignment,
                user=request_user(request),
                question=data["question"],
                value=data["value"],
                turn_id=data.get("turn"),
            )
        except AnswerError as exc:
            raise _refused_answer(exc) from exc
        return Response(
            {
                "question": rating.question,
                "turn": rating.turn_id,
                "value": rating.value,
                "text": rating.text,
            }
        )


class AssignmentSubmitApi(APIView):
    """Submit an item; 400 names the missing answers."""

    permission_classes = [IsExpert]

    @extend_schema(request=None, responses={200: AssignmentOutput, 400: refused()})
    def post(self, request: Request, pk: int) -> Response:
        assignment = _my_assignment(request, pk)
        try:
            assignment = ratings.assignment_submit(
                assignment=assignment, user=request_user(request)
            )
        except AnswerError as exc:
            raise _refused_answer(exc) from exc
        return Response(AssignmentOutput(assignment).data)
