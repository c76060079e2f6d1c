"""A study's pairwise votes on its pages: import, export, the identity-leak list and word list."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chat.forms_votes import IdentityWordsForm, VoteImportForm
from chat.models import Campaign
from chat.selectors import votes as selectors
from chat.services import votes as services
from chat.services.identity import DEFAULT_IDENTITY_WORDS
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.http import download, redirect_after_form

EXPORT_FILES = ("jsonl", "csv")
LEAKS_PER_PAGE = 25


def vote_download(campaign: Campaign, *, fmt: str, file: str) -> StreamingHttpResponse:
    """The study's votes as a streamed file (the page's export links and the API)."""
    as_csv = file == "csv"
    lines = services.votes_export_lines(campaign=campaign, fmt=fmt, as_csv=as_csv)
    content_type = "text/csv; charset=utf-8" if as_csv else "application/x-ndjson; charset=utf-8"
    return download(
        lines, filename=f"study-{campaign.pk}-votes-{fmt}.{file}", content_type=content_type
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def campaign_votes_import(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Upload a vote file into this study (all-or-nothing); the study page shows the form too."""
    campaign = get_object_or_404(Campaign, pk=pk)
    form = VoteImportForm(request.POST or None, request.FILES or None)
    import_error: services.VoteImportError | None = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = services.votes_import(
                fileobj=data["file"],
                campaign_name=campaign.name,
                label=data["file"].name or "",
                created_by=request.user,
                voter_kind=data["voter_kind"],
                language=data["language"],
                skill=data["skill"],
            )
        except services.VoteImportError as exc:
            import_error = exc
        else:
            messages.success(
                request,
                _(
                    "已导入 %(votes)d 条成对投票和 %(dialogues)d 个对话，其中 %(leaks)d 条"
                    "因泄露模型身份被标记。"
                )
                % {
                    "votes": result.votes,
                    "dialogues": result.dialogues,
                    "leaks": result.identity_leaks,
                },
            )
            if result.ignored_fields:
                messages.info(
                    request,
                    _("未读取的字段：%(fields)s") % {"fields": ", ".join(result.ignored_fields)},
                )
            # No "#votes": a URL that differs from the page's only in its fragment would not
            # reload it (the counts would stay as they were).
            return redirect_after_form(request, "chat:campaign-detail", pk=campaign.pk)
    status = 400 if request.method == "POST" else 200
    context = {
        "campaign": campaign,
        "vote_form": form,
        "import_error": import_error,
        "vote_counts": selectors.vote_counts(campaign=campaign),
    }
    return render(request, "chat/votes_import.html", context, status=status)


@role_required(Role.RESEARCHER)
@require_GET
def campaign_votes_export(request: AuthenticatedHttpRequest, pk: int) -> StreamingHttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    fmt = request.GET.get("format", "fastchat")
    file = request.GET.get("file", "jsonl")
    if fmt not in services.FORMATS or file not in EXPORT_FILES:
        raise Http404("format must be fastchat or plain, file jsonl or csv")
    return vote_download(campaign, fmt=fmt, file=file)


@role_required(Role.RESEARCHER)
@require_GET
def campaign_vote_leaks(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The votes flagged as identity leaks, with the word found and where, and the word list."""
    campaign = get_object_or_404(Campaign, pk=pk)
    page = Paginator(selectors.identity_leak_list(campaign=campaign), LEAKS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    rows = [(vote, selectors.leak_excerpt(vote)) for vote in page]
    form = IdentityWordsForm(initial={"words": "\n".join(campaign.identity_words)})
    return render(
        request,
        "chat/vote_leaks.html",
        {
            "campaign": campaign,
            "page": page,
            "rows": rows,
            "words_form": form,
            "default_words": DEFAULT_IDENTITY_WORDS,
        },
    )


@role_required(Role.RESEARCHER)
@require_POST
def campaign_identity_words(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    form = IdentityWordsForm(request.POST)
    if form.is_valid():
        try:
            services.campaign_set_identity_words(
                campaign=campaign, words=form.cleaned_data["words"]
            )
        except services.IdentityWordsError as exc:
            form.add_error("words", exc.message)
    if not form.is_valid():
        for error in form.errors.get("words", []):
            messages.error(request, str(error))
    else:
        messages.success(request, _("身份词表已保存，之后导入的投票按新词表标记。"))
    return redirect("chat:campaign-vote-leaks", pk=campaign.pk)
