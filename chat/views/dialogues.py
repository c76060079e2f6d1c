"""Dialogue JSONL pages: a campaign's export (streamed) and the import upload form."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from chat.forms_static import DialogueImportForm
from chat.models import Campaign, Dialogue, StaticRun
from chat.services import dialogue_io
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.http import jsonl_download, redirect_after_form


def export_filters(
    campaign: Campaign, params: dict[str, list[str]]
) -> tuple[StaticRun | None, list[str]]:
    """`static_run` and `status` query parameters, validated (an unknown value is a 404)."""
    static_run = None
    run_id = (params.get("static_run") or [""])[0]
    if run_id:
        if not run_id.isdigit():
            raise Http404("static_run must be a run id")
        static_run = get_object_or_404(StaticRun, pk=int(run_id), campaign=campaign)
    statuses = [status for status in params.get("status", []) if status]
    unknown = [status for status in statuses if status not in Dialogue.Status.values]
    if unknown:
        raise Http404(f"unknown status: {', '.join(unknown)}")
    return static_run, statuses


@role_required(Role.RESEARCHER)
def campaign_dialogues_export(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    static_run, statuses = export_filters(campaign, dict(request.GET.lists()))
    lines = dialogue_io.dialogue_export_lines(
        campaign=campaign, static_run=static_run, statuses=statuses
    )
    return jsonl_download(lines, filename=f"campaign-{campaign.pk}-dialogues.jsonl")


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def dialogue_import(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = DialogueImportForm(request.POST or None, request.FILES or None)
    import_error: dialogue_io.DialogueImportError | None = None
    if request.method == "POST" and form.is_valid():
        try:
            result = dialogue_io.dialogues_import(
                fileobj=form.cleaned_data["file"],
                campaign_name=form.cleaned_data["campaign"],
                created_by=request.user,
            )
        except dialogue_io.DialogueImportError as exc:
            import_error = exc
        else:
            messages.success(
                request,
                _("已导入 %(dialogues)d 个对话（%(turns)d 个话轮）到评测活动「%(campaign)s」。")
                % {
                    "dialogues": result.dialogues,
                    "turns": result.turns,
                    "campaign": result.campaign.name,
                },
            )
            return redirect_after_form(request, "chat:dialogue-import")
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "chat/dialogue_import.html",
        {"form": form, "import_error": import_error},
        status=status,
    )
