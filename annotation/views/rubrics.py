"""Rubric builder pages (researchers): list with versions, a version's questions, the editor."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from annotation.forms_rubrics import (
    blank_row,
    choices,
    editor_from_post,
    editor_from_spec,
    parse_json,
    spec_json,
)
from annotation.models import Rubric
from annotation.rubric_spec import RubricSpecError, as_spec
from annotation.selectors import rubrics as selectors
from annotation.services import rubrics as services
from chat.models import Skill
from core.access import AuthenticatedHttpRequest, Role, role_required

EMPTY_SPEC: dict[str, Any] = {"key": "", "overall": "mean", "questions": [{}]}


@role_required(Role.RESEARCHER)
def rubric_list(request: HttpRequest) -> HttpResponse:
    families = selectors.rubric_families(language=get_language() or "zh-hans")
    return render(request, "annotation/rubric_list.html", {"families": families})


@role_required(Role.RESEARCHER)
def rubric_detail(request: HttpRequest, pk: int) -> HttpResponse:
    rubric = get_object_or_404(Rubric, pk=pk)
    spec = as_spec(rubric.spec)
    context = {
        "rubric": rubric,
        "spec": spec,
        "english": (get_language() or "").startswith("en"),
        "title": selectors.localized(spec.title, get_language() or "zh-hans"),
        "questions": selectors.rubric_question_views(spec=spec),
        "categories": {
            key: selectors.localized(label, get_language() or "zh-hans")
            for key, label in spec.categories.items()
        },
        "versions": Rubric.objects.filter(key=rubric.key).order_by("-version"),
        "has_gates": any(q.gate for q in spec.questions),
        "frozen": selectors.rubric_is_frozen(rubric=rubric),
        "in_use": selectors.rubric_in_use(rubric=rubric),
        "spec_json": spec_json(rubric.spec),
    }
    return render(request, "annotation/rubric_detail.html", context)


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def rubric_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A new rubric key; `?from=<pk>` starts from a copy of another rubric (e.g. a preset)."""
    spec = EMPTY_SPEC
    source = request.GET.get("from")
    if source and source.isdigit():
        spec = dict(get_object_or_404(Rubric, pk=int(source)).spec, key="")
    return _editor(request, rubric=None, initial=spec)


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def rubric_edit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    rubric = get_object_or_404(Rubric, pk=pk)
    return _editor(request, rubric=rubric, initial=rubric.spec)


@role_required(Role.RESEARCHER)
@require_GET
def rubric_question_row(request: HttpRequest) -> HttpResponse:
    """htmx: an empty question row for the editor, and the next free row index."""
    index = request.GET.get("index", "")
    row = blank_row(int(index) if index.isdigit() else 0)
    context = {"row": row, "skills": Skill.objects.all(), "next_index": row.index + 1, **choices()}
    return render(request, "annotation/rubric_edit.html#question-row-added", context)


def _editor(
    request: AuthenticatedHttpRequest, *, rubric: Rubric | None, initial: dict[str, Any]
) -> HttpResponse:
    mode = request.POST.get("mode") or request.GET.get("mode") or "form"
    mode = "json" if mode == "json" else "form"
    json_text = spec_json(initial)
    form = editor_from_spec(initial)
    json_errors: list[str] = []
    if request.method == "POST":
        if mode == "json":
            json_text = request.POST.get("spec_json", "")
            spec, problems = parse_json(json_text)
        else:
            form, spec, problems = editor_from_post(request.POST)
        if not problems:
            try:
                saved = _save(rubric=rubric, spec=spec, request=request)
            except RubricSpecError as exc:
                problems = exc.errors
            else:
                return redirect("annotation:rubric-detail", pk=saved.pk)
        if mode == "json":
            json_errors = [f"{path}: {message}" for path, message in problems]
        else:
            form.place(problems)
    context = {
        "rubric": rubric,
        "mode": mode,
        "form": form,
        "json_text": json_text,
        "json_errors": json_errors,
        "frozen": rubric is not None and selectors.rubric_is_frozen(rubric=rubric),
        "next_version": (
            selectors.rubric_latest_version(key=rubric.key) + 1 if rubric is not None else 1
        ),
        "skills": Skill.objects.all(),
        "next_index": max((row.index for row in form.rows), default=-1) + 1,
        **choices(),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/rubric_edit.html", context, status=status)


def _save(*, rubric: Rubric | None, spec: Any, request: AuthenticatedHttpRequest) -> Rubric:
    if rubric is None:
        saved = services.rubric_create(spec=spec, created_by=request.user)
        messages.success(request, _("已创建评分表 %(name)s。") % {"name": saved})
    else:
        saved = services.rubric_edit(rubric=rubric, spec=spec, created_by=request.user)
        if saved.pk == rubric.pk:
            messages.success(request, _("已保存 %(name)s。") % {"name": saved})
        else:
            messages.success(
                request,
                _("%(old)s 已被使用或为预设，不能修改；修改已保存为新版本 %(new)s。")
                % {"old": rubric, "new": saved},
            )
    return saved
