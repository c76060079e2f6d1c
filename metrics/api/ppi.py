"""REST API of a rating job's prediction-powered estimates, planning and rounds (issue 28)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import RatingJob
from core.access import request_user
from core.api import KEY_MAX_LENGTH, refused
from metrics.services import ppi, ppi_pairwise, ppi_rounds

MAX_RUNS = 20
JUDGE_MAX_LENGTH = 200  # chat.Vote.voter


class PredictorInput(serializers.Serializer[Any]):
    runs = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
        min_length=1,
        max_length=MAX_RUNS,
        help_text="the metric runs (or judge runs) the predictor comes from",
    )
    predictor = serializers.ListField(
        child=serializers.CharField(max_length=KEY_MAX_LENGTH),
        min_length=1,
        max_length=ppi.MAX_PREDICTOR_METRICS,
        help_text="one metric name, or several (their z-scores are averaged)",
    )
    question = serializers.CharField(max_length=KEY_MAX_LENGTH, default="overall")
    alpha = serializers.FloatField(
        min_value=ppi.ALPHA_RANGE[0], max_value=ppi.ALPHA_RANGE[1], default=0.1
    )


class EstimatesInput(PredictorInput):
    bootstrap = serializers.IntegerField(min_value=0, max_value=ppi.MAX_BOOTSTRAP, default=1000)
    seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=0)


class PlanInput(PredictorInput):
    target_width = serializers.FloatField(min_value=1e-9, max_value=1e6)


class StoppingRuleInput(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=ppi_rounds.RULE_KINDS)
    round_size = serializers.IntegerField(min_value=2, max_value=ppi_rounds.MAX_ROUND_SIZE)
    first_round = serializers.IntegerField(min_value=2, max_value=ppi_rounds.MAX_ROUND_SIZE)
    target_width = serializers.FloatField(
        min_value=1e-9, max_value=1e6, required=False, allow_null=True
    )
    budget = serializers.IntegerField(
        min_value=1, max_value=ppi_rounds.MAX_BUDGET, required=False, allow_null=True
    )
    alpha = serializers.FloatField(
        min_value=ppi.ALPHA_RANGE[0], max_value=ppi.ALPHA_RANGE[1], default=0.1
    )
    question = serializers.CharField(max_length=KEY_MAX_LENGTH, default="overall")
    runs = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1),
        max_length=MAX_RUNS,
        default=list,
    )
    predictor = serializers.ListField(
        child=serializers.CharField(max_length=KEY_MAX_LENGTH),
        max_length=ppi.MAX_PREDICTOR_METRICS,
        default=list,
    )


def _job(pk: int) -> RatingJob:
    return get_object_or_404(RatingJob.objects.select_related("rubric"), pk=pk)


def _checked(job: RatingJob, data: dict[str, Any]) -> tuple[ppi.Predictor, str]:
    predictor = ppi.predictor_check(run_ids=data["runs"], metrics=data["predictor"])
    return predictor, ppi.question_check(job=job, question=data["question"])


class RatingJobEstimatesApi(APIView):
    @extend_schema(
        request=EstimatesInput,
        responses={200: OpenApiTypes.OBJECT, 400: refused("Bad options")},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Per system: the human-only and human + predictor (PPI++) estimates with normal and
        bootstrap intervals, the predictor-only mean, effective sample size, λ and the
        predictor's Pearson r with the humans; ``refused`` says why a sampling design cannot
        give an unbiased estimate."""
        job = _job(pk)
        serializer = EstimatesInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        predictor, question = _checked(job, data)
        return Response(
            ppi.ppi_estimates(
                job=job,
                question=question,
                predictor=predictor,
                alpha=data["alpha"],
                bootstrap=data["bootstrap"],
                seed=data["seed"],
            )
        )


class RatingJobPlanApi(APIView):
    @extend_schema(
        request=PlanInput, responses={200: OpenApiTypes.OBJECT, 400: refused("Bad options")}
    )
    def post(self, request: Request, pk: int) -> Response:
        """Per system, the human ratings needed for the target interval width, human-only and
        with the predictor, from the job's current ratings as the pilot."""
        job = _job(pk)
        serializer = PlanInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        predictor, question = _checked(job, data)
        return Response(
            ppi.ratings_plan(
                job=job,
                question=question,
                predictor=predictor,
                target_width=data["target_width"],
                alpha=data["alpha"],
            )
        )


class RatingJobStoppingRuleApi(APIView):
    @extend_schema(
        request=StoppingRuleInput,
        responses={200: OpenApiTypes.OBJECT, 400: refused("Cannot run in rounds")},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Make a draft job run in rounds under a stopping rule (its first round is drawn when
        the job opens)."""
        job = _job(pk)
        serializer = StoppingRuleInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        job = ppi_rounds.stopping_rule_set(job=job, run_ids=data.pop("runs"), **data)
        return Response({"job": job.pk, "stopping_rule": job.stopping_rule})


class RatingJobRoundsApi(APIView):
    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, 400: refused("No rounds")})
    def get(self, request: Request, pk: int) -> Response:
        """Where a job in rounds stands: the rule's progress, the projected ratings still
        needed, each system's estimate, the rounds so far, what blocks the next round."""
        return Response(ppi_rounds.public_status(ppi_rounds.rounds_status(job=_job(pk))))

    @extend_schema(
        request=None, responses={201: OpenApiTypes.OBJECT, 400: refused("No round drawn")}
    )
    def post(self, request: Request, pk: int) -> Response:
        """Draw the next round (refused while the last one is being rated, or once the rule
        is met) and assign its dialogues."""
        drawn = ppi_rounds.round_draw(job=_job(pk), created_by=request_user(request))
        body = {
            "number": drawn.number,
            "counts": drawn.counts,
            "inclusion": drawn.inclusion,
            "dialogues": drawn.dialogues,
        }
        return Response(body, status=status.HTTP_201_CREATED)


class PairwiseInput(serializers.Serializer[Any]):
    judge = serializers.CharField(
        max_length=JUDGE_MAX_LENGTH, help_text="the judge's voter prefix: judge:<key>[-v<N>]"
    )
    question = serializers.CharField(max_length=KEY_MAX_LENGTH)
    alpha = serializers.FloatField(
        min_value=ppi.ALPHA_RANGE[0], max_value=ppi.ALPHA_RANGE[1], default=0.1
    )


class RatingJobPairwisePPIApi(APIView):
    @extend_schema(
        request=PairwiseInput, responses={200: OpenApiTypes.OBJECT, 400: refused("Bad options")}
    )
    def post(self, request: Request, pk: int) -> Response:
        """A pairwise job that rated a random subset of its comparisons: per system the
        human-only and human + judge (prediction-powered) Bradley–Terry ratings with intervals,
        their widths and the effective sample size, and the judge's agreement with the humans
        on the comparisons they voted on."""
        serializer = PairwiseInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        return Response(
            ppi_pairwise.pairwise_ppi(
                job=_job(pk), judge=data["judge"], question=data["question"], alpha=data["alpha"]
            )
        )
