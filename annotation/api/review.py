"""REST API of the review of collected dialogues: the expert's queue and decisions; the
researcher's per-campaign review policy."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Review, ReviewPolicy
from annotation.selectors import review as selectors
from annotation.services import review as services
from chat.models import Campaign, Dialogue
from core.access import IsExpert, request_user
from core.api import KEY_MAX_LENGTH, LIST_MAX_ITEMS, model_bounds, refused


class QueueItemOutput(serializers.Serializer):
    id = serializers.IntegerField()
    campaign = serializers.CharField(source="campaign.name")
    skill = serializers.CharField(source="skill.key")
    language = serializers.CharField()
    submitted_at = serializers.DateTimeField()
    n_reviews = serializers.IntegerField()
    n_needed = serializers.IntegerField()


class ReviewQueueApi(APIView):
    """Submitted dialogues the current expert may review (never their own)."""

    permission_classes = [IsExpert]

    @extend_schema(responses={200: QueueItemOutput(many=True)})
    def get(self, request: Request) -> Response:
        queue = selectors.review_queue(reviewer=request_user(request))[:200]
        return Response(QueueItemOutput(queue, many=True).data)


class ReviewDecisionApi(APIView):
    """Accept or reject a submitted dialogue (reasons: fluent, natural, appropriate, coherent,
    knowledge; a rejection needs a reason or a comment)."""

    permission_classes = [IsExpert]

    class ReviewDecisionInput(serializers.Serializer):
        decision = serializers.ChoiceField(choices=Review.Decision.choices)
        reasons = serializers.ListField(
            child=serializers.CharField(max_length=KEY_MAX_LENGTH),
            max_length=LIST_MAX_ITEMS,
            required=False,
        )
        comment = serializers.CharField(
            required=False, allow_blank=True, default="", **model_bounds(Review, "comment")
        )

    class ReviewDecisionOutput(serializers.Serializer):
        id = serializers.IntegerField()
        decision = serializers.CharField()
        reasons = serializers.ListField(child=serializers.CharField())
        comment = serializers.CharField()
        dialogue_status = serializers.CharField(source="dialogue.status")

    @extend_schema(
        request=ReviewDecisionInput,
        responses={
            201: ReviewDecisionOutput,
            400: refused(),
            403: refused(),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        dialogue = get_object_or_404(Dialogue, pk=pk)
        serializer = self.ReviewDecisionInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        review = services.review_submit(
            dialogue=dialogue,
            reviewer=request_user(request),
            decision=data["decision"],
            reasons=data.get("reasons", []),
            comment=data.get("comment", ""),
        )
        review.dialogue.refresh_from_db(fields=["status"])
        return Response(self.ReviewDecisionOutput(review).data, status=status.HTTP_201_CREATED)


class ReviewPolicyApi(APIView):
    """How many experts review each dialogue of a campaign and how they decide (researchers)."""

    class ReviewPolicyBody(serializers.Serializer):
        reviewers_per_dialogue = serializers.IntegerField(
            **model_bounds(ReviewPolicy, "reviewers_per_dialogue", min_value=1)
        )
        decision_rule = serializers.ChoiceField(choices=ReviewPolicy.Rule.choices)

    @extend_schema(responses={200: ReviewPolicyBody})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        policy = services.review_policy_for(campaign)
        return Response(self.ReviewPolicyBody(policy).data)

    @extend_schema(
        request=ReviewPolicyBody,
        responses={200: ReviewPolicyBody, 400: refused()},
    )
    def put(self, request: Request, campaign_id: int) -> Response:
        campaign = get_object_or_404(Campaign, pk=campaign_id)
        serializer = self.ReviewPolicyBody(data=request.data)
        serializer.is_valid(raise_exception=True)
        policy = services.review_policy_set(campaign=campaign, **serializer.validated_data)
        return Response(self.ReviewPolicyBody(policy).data)
