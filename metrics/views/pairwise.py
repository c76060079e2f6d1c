"""The study's pairwise ranking page: its Bradley–Terry leaderboard with intervals drawn as a
forest plot, which adjacent systems are already separated, and the win-rate matrix."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext_lazy as _

from chat.models import Campaign
from core.access import Role, role_required
from metrics.selectors import votes as vote_selectors
from metrics.services import pairwise


class RankingOptions(forms.Form):
    """The page's GET options (bookmarkable); the service checks what the form cannot."""

    voters = forms.ChoiceField(label=_("投票者"), required=False)
    question = forms.ChoiceField(label=_("问题"), required=False)
    bootstrap = forms.IntegerField(
        label=_("Bootstrap 轮数"),
        min_value=0,
        max_value=pairwise.MAX_ROUNDS,
        initial=1000,
        required=False,
    )
    include_identity_leaks = forms.BooleanField(label=_("计入泄露模型身份的投票"), required=False)
    judge_rule = forms.ChoiceField(
        label=_("裁判的两种顺序"),
        choices=[
            ("per_order", _("每种顺序各算一票")),
            ("conservative", _("合为一票（保守规则）")),
        ],
        required=False,
    )

    def __init__(self, *args: Any, campaign_ids: list[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judges = vote_selectors.judge_voters(campaign_ids)
        self.fields["voters"].choices = [  # type: ignore[attr-defined]  # a ChoiceField
            ("humans", _("人工")),
            *[(judge, judge) for judge in judges],
            ("all", _("全部（人工与裁判）")),
        ]
        self.fields["question"].choices = [  # type: ignore[attr-defined]  # a ChoiceField
            (question, question or _("总体"))
            for question in vote_selectors.vote_questions(campaign_ids)
        ]


def _forest(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Each row's interval and point as percentages of the plot's width."""
    low = min(row["lower"] for row in board["systems"])
    high = max(row["upper"] for row in board["systems"])
    span = (high - low) or 1.0
    return [
        {
            **row,
            "left": 100 * (row["lower"] - low) / span,
            "width": max(100 * (row["upper"] - row["lower"]) / span, 0.5),
            "point": 100 * (row["rating"] - low) / span,
        }
        for row in board["systems"]
    ]


@role_required(Role.RESEARCHER)
def study_ranking(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    form = RankingOptions(request.GET or None, campaign_ids=[campaign.pk])
    options: dict[str, Any] = {}
    if form.is_bound and form.is_valid():
        options = {
            key: value for key, value in form.cleaned_data.items() if value not in ("", None)
        }
    board = error = None
    if vote_selectors.study_has_votes([campaign.pk]):
        try:
            board = pairwise.rank_pairwise(
                campaign_ids=[campaign.pk],
                voters=options.get("voters", "humans"),
                question=options.get("question"),
                rounds=options.get("bootstrap", 1000),
                include_identity_leaks=options.get("include_identity_leaks", False),
                judge_rule=options.get("judge_rule", "per_order"),
            )
        except (pairwise.PairwiseConfigError, pairwise.PairwiseDataError) as exc:
            error = exc.message
    context = {
        "campaign": campaign,
        "form": form,
        "board": board,
        "forest": _forest(board) if board else [],
        "matrix": (
            list(zip(board["matrix_systems"], board["win_rate"], board["battles"], strict=True))
            if board
            else []
        ),
        "error": error,
        "query": request.GET.urlencode(),
    }
    return render(request, "metrics/study_ranking.html", context)
