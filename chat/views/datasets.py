"""HTML views of the chat app. They check access, parse input, and call services/selectors."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from chat.forms import DatasetUploadForm
from chat.importers import DatasetImportError
from chat.models import Dataset, Language, Skill
from chat.selectors import datasets as selectors
from chat.selectors.collection import grounding_view
from chat.services import datasets as services
from core.access import AuthenticatedHttpRequest, Role, role_required
from core.http import jsonl_download, redirect_after_form


@role_required(Role.RESEARCHER)
def dataset_list(request: HttpRequest) -> HttpResponse:
    datasets = selectors.dataset_list(
        user=request.user,
        skill=request.GET.get("skill") or None,
        language=request.GET.get("language") or None,
    )
    page = Paginator(datasets, 25).get_page(request.GET.get("page"))
    return render(
        request,
        "chat/dataset_list.html",
        {"page": page, "skills": Skill.objects.all(), "languages": Language.choices},
    )


# Characters of one utterance or reference shown on the dataset page before "show all".
PAGE_TEXT_LIMIT = 1000


@role_required(Role.RESEARCHER)
def dataset_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    dataset = get_object_or_404(Dataset.objects.select_related("skill"), pk=pk)
    page = Paginator(selectors.sample_list(dataset=dataset), 20).get_page(request.GET.get("page"))
    for sample in page.object_list:  # long texts are cut; "show all" opens one sample whole
        sample.grounding_view = grounding_view(skill=sample.skill.key, grounding=sample.grounding)  # type: ignore[attr-defined]  # for the template
        sample.longest = max(map(len, [*sample.context, *sample.references]), default=0)  # type: ignore[attr-defined]  # for the template
    full = request.GET.get("full", "")
    template = "chat/dataset_detail.html#samples" if request.htmx else "chat/dataset_detail.html"
    context = {
        "dataset": dataset,
        "page": page,
        "full": int(full) if full.isdigit() else None,
        "text_limit": PAGE_TEXT_LIMIT,
    }
    return render(request, template, context)


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def dataset_upload(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = DatasetUploadForm(request.POST or None, request.FILES or None)
    import_error: DatasetImportError | None = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            dataset = services.dataset_import(
                fileobj=data["file"],
                name=data["name"],
                source_format=data["source_format"],
                language=data["language"],
                skill=data["skill"].key if data["skill"] else None,
                description=data["description"],
                created_by=request.user,
            )
        except DatasetImportError as exc:
            import_error = exc
        else:
            messages.success(
                request,
                _("已导入 %(count)d 个样本到数据集「%(name)s」。")
                % {"count": dataset.sample_count, "name": dataset.name},
            )
            return redirect_after_form(request, "chat:dataset-detail", pk=dataset.pk)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "chat/dataset_upload.html",
        {"form": form, "import_error": import_error},
        status=status,
    )


@role_required(Role.RESEARCHER)
def dataset_export(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    dataset = get_object_or_404(Dataset, pk=pk)
    lines = services.dataset_export_lines(dataset=dataset)
    return jsonl_download(lines, filename=f"dataset-{dataset.pk}.jsonl")
