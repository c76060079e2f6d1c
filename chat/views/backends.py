"""Researcher pages for model backends: list, create, edit, (de)activate, test connection."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from chat.backends.config import ADAPTER_KEYS, REQUIRED, allowed_keys
from chat.backends.errors import BackendConfigError
from chat.forms_backends import BackendForm
from chat.models import Backend, Skill
from chat.selectors import backends as selectors
from chat.services import backends as services
from chat.services.generation import backend_connection_check
from core.access import AuthenticatedHttpRequest, Role, role_required

# Shown beside the config editor for the adapter chosen (keys are documented in docs/backends.md).
CONFIG_EXAMPLES = {
    "openai": '{\n  "base_url": "http://127.0.0.1:8000/v1",\n  "model": "Qwen2.5-7B-Instruct",\n'
    '  "temperature": 0.7,\n  "max_tokens": 256\n}',
    "http": '{\n  "url": "http://127.0.0.1:9000/reply",\n  "temperature": 0.7\n}',
    "transformers": '{\n  "model_path": "/models/my-model",\n  "max_new_tokens": 128,\n'
    '  "device": "auto"\n}',
    "retrieval": '{\n  "method": "bm25",\n  "dataset": "演示·知识对话",\n'
    '  "k1": 1.2,\n  "b": 0.75\n}',
}


def _skills() -> list[Skill]:
    return list(Skill.objects.all())


def _help_context(adapter: str, api_key_env: str) -> dict:
    adapter = adapter if adapter in CONFIG_EXAMPLES else "openai"
    env_state = None
    if api_key_env.strip():
        probe = Backend(api_key_env=api_key_env.strip())
        env_state = selectors.api_key_is_set(probe)
    return {
        "help_adapter": adapter,
        "help_example": CONFIG_EXAMPLES[adapter],
        "help_keys": allowed_keys(adapter),
        "help_required": REQUIRED[adapter],
        "help_env_name": api_key_env.strip(),
        "help_env_state": env_state,
    }


def _render_form(
    request: HttpRequest, form: BackendForm, backend: Backend | None, status: int = 200
) -> HttpResponse:
    adapter = form.data.get("adapter") if form.is_bound else form.initial.get("adapter")
    env = form.data.get("api_key_env", "") if form.is_bound else form.initial.get("api_key_env")
    context = {"form": form, "backend": backend, **_help_context(adapter or "", env or "")}
    return render(request, "chat/backend_form.html", context, status=status)


@role_required(Role.RESEARCHER)
def backend_list(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("active", "")
    adapter = request.GET.get("adapter") or None
    backends = selectors.backend_list(
        user=request.user,
        active={"1": True, "0": False}.get(state),
        adapter=adapter if adapter in Backend.Adapter.values else None,
    )
    page = Paginator(backends, 25).get_page(request.GET.get("page"))
    rows = [(b, selectors.api_key_is_set(b)) for b in page]
    return render(
        request,
        "chat/backend_list.html",
        {"page": page, "rows": rows, "adapters": Backend.Adapter.choices},
    )


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def backend_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = BackendForm(request.POST or None, skills=_skills(), initial={"adapter": "openai"})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            backend = services.backend_create(
                name=data["name"],
                adapter=data["adapter"],
                config=form.service_config(),
                api_key_env=data["api_key_env"],
                concurrency_limit=data["concurrency_limit"],
                timeout_s=data["timeout_s"],
                description=data["description"],
                created_by=request.user,
            )
        except BackendConfigError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, _("已创建模型后端「%(name)s」。") % {"name": backend.name})
            return redirect("chat:backend-detail", pk=backend.pk)
    return _render_form(request, form, None, 400 if request.method == "POST" else 200)


@role_required(Role.RESEARCHER)
@require_http_methods(["GET", "POST"])
def backend_edit(request: HttpRequest, pk: int) -> HttpResponse:
    backend = get_object_or_404(Backend, pk=pk)
    form = BackendForm(
        request.POST or None, skills=_skills(), initial=BackendForm.initial_for(backend)
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            backend = services.backend_update(
                backend=backend,
                name=data["name"],
                adapter=data["adapter"],
                config=form.service_config(),
                api_key_env=data["api_key_env"],
                concurrency_limit=data["concurrency_limit"],
                timeout_s=data["timeout_s"],
                description=data["description"],
            )
        except BackendConfigError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, _("已保存模型后端「%(name)s」。") % {"name": backend.name})
            return redirect("chat:backend-detail", pk=backend.pk)
    return _render_form(request, form, backend, 400 if request.method == "POST" else 200)


@role_required(Role.RESEARCHER)
@require_GET
def backend_form_help(request: HttpRequest) -> HttpResponse:
    """The adapter's config keys and example, and whether the key variable is set (htmx)."""
    context = _help_context(request.GET.get("adapter", ""), request.GET.get("api_key_env", ""))
    return render(request, "chat/backend_form.html#help", context)


@role_required(Role.RESEARCHER)
def backend_detail(request: HttpRequest, pk: int) -> HttpResponse:
    backend = get_object_or_404(Backend.objects.select_related("created_by"), pk=pk)
    return render(request, "chat/backend_detail.html", _detail_context(backend))


def _detail_context(backend: Backend, **extra: object) -> dict:
    config = {k: v for k, v in (backend.config or {}).items() if k != "prompt_templates"}
    return {
        "backend": backend,
        "config_json": json.dumps(config, ensure_ascii=False, indent=2),
        "api_key_set": selectors.api_key_is_set(backend),
        "templates": selectors.backend_prompt_templates(backend=backend),
        "callable": backend.adapter in ADAPTER_KEYS and backend.adapter != "imported",
        "failures": selectors.reply_failure_summary(backend=backend),
        **extra,
    }


@role_required(Role.RESEARCHER)
@require_POST
def backend_set_active(request: HttpRequest, pk: int) -> HttpResponse:
    backend = get_object_or_404(Backend, pk=pk)
    if request.POST.get("active") == "1":
        services.backend_activate(backend=backend)
        messages.success(request, _("已重新启用「%(name)s」。") % {"name": backend.name})
    else:
        services.backend_deactivate(backend=backend)
        messages.success(
            request,
            _("已停用「%(name)s」：新的评测活动不能再选择它，已有对话保留。")
            % {"name": backend.name},
        )
    return redirect("chat:backend-detail", pk=backend.pk)


@role_required(Role.RESEARCHER)
@require_POST
def backend_test(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Send one message and show latency and reply or error (a partial for htmx)."""
    backend = get_object_or_404(Backend, pk=pk)
    message = (request.POST.get("message") or "").strip()[:500] or "你好"
    result = backend_connection_check(backend=backend, message=message)
    if request.htmx:
        return render(
            request,
            "chat/backend_detail.html#test-result",
            {"backend": backend, "result": result, "test_message": message},
        )
    return render(
        request,
        "chat/backend_detail.html",
        _detail_context(backend, result=result, test_message=message),
    )
