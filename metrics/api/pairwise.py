"""REST API of pairwise rankings: a study's Bradley–Terry leaderboard from its votes (the same
service as ``manage.py rank_pairwise`` and the study's ranking page)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.models import Campaign
from core.api import refused
from metrics.services import pairwise


class RankingQuery(serializers.Serializer):
    study = serializers.IntegerField(min_value=1, help_text="the study's (campaign's) id")
    voters = serializers.CharField(
        max_length=200, default="humans", help_text="humans, judge:<key>[-v<N>] or all"
    )
    question = serializers.CharField(
        max_length=60,
        required=False,
        allow_blank=True,
        help_text='a rubric question key ("" = overall); default: the votes\' only question',
    )
    bootstrap = serializers.IntegerField(min_value=0, max_value=pairwise.MAX_ROUNDS, default=1000)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    confidence = serializers.FloatField(min_value=0.5, max_value=0.999, default=0.95)
    judge_rule = serializers.ChoiceField(choices=pairwise.JUDGE_RULES, default="per_order")
    interval = serializers.ChoiceField(choices=pairwise.INTERVALS, default="bootstrap")
    include_identity_leaks = serializers.BooleanField(default=False)
    include_excluded = serializers.BooleanField(default=False)
    anchor_system = serializers.CharField(max_length=120, required=False)
    anchor_rating = serializers.FloatField(
        min_value=-pairwise.MAX_RATING, max_value=pairwise.MAX_RATING, required=False
    )
    output = serializers.ChoiceField(choices=("json", "csv"), default="json")

    def validate(self, attrs: dict) -> dict:
        if ("anchor_system" in attrs) != ("anchor_rating" in attrs):
            raise serializers.ValidationError(
                {"anchor_system": "give anchor_system and anchor_rating together"}
            )
        return attrs


class PairwiseRankingApi(APIView):
    @extend_schema(
        parameters=[RankingQuery],
        responses={
            200: OpenApiResponse(
                description="The leaderboard (best first) with intervals, ranks, matrices, "
                "separations and the signature; output=csv gives system,rating,lower,upper,rank,"
                "rank_lower,rank_upper,votes,se,elo"
            ),
            400: refused("Bad options or votes that cannot be ranked"),
        },
    )
    def get(self, request: Request) -> Response | HttpResponse:
        query = RankingQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        options = query.validated_data
        campaign = get_object_or_404(Campaign, pk=options["study"])
        anchor = None
        if "anchor_system" in options:
            anchor = {"system": options["anchor_system"], "rating": options["anchor_rating"]}
        board = pairwise.rank_pairwise(
            campaign_ids=[campaign.pk],
            voters=options["voters"],
            question=options.get("question"),
            rounds=options["bootstrap"],
            seed=options["seed"],
            confidence=options["confidence"],
            include_identity_leaks=options["include_identity_leaks"],
            include_excluded=options["include_excluded"],
            judge_rule=options["judge_rule"],
            interval=options["interval"],
            anchor=anchor,
        )
        if options["output"] == "csv":
            response = HttpResponse(pairwise.leaderboard_csv(board), content_type="text/csv")
            response["Content-Disposition"] = (
                f'attachment; filename="study-{campaign.pk}-pairwise-ranking.csv"'
            )
            return response
        return Response({"study": campaign.pk, "study_name": campaign.name, **board})
