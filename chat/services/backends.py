"""Operations on model backends: create, update, deactivate (with validation per adapter)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from chat.backends.config import validate_api_key_env, validate_config
from chat.backends.errors import BackendConfigError
from chat.models import Backend, Dataset

NAME_MAX_LENGTH = 120  # chat.Backend.name
MAX_CONCURRENCY = 1000
MAX_TIMEOUT_S = 3600.0
_UNSET: Any = object()


def _check_config(adapter: str, config: Any) -> dict[str, Any]:
    try:
        validate_config(adapter, config)
    except BackendConfigError as exc:
        if exc.field in ("adapter", "config"):
            raise
        raise BackendConfigError(exc.detail, field=f"config.{exc.field}") from None
    if adapter == Backend.Adapter.RETRIEVAL:
        name = config["dataset"]
        if name != "*" and not Dataset.objects.filter(name=name).exists():
            raise BackendConfigError(f"no dataset named '{name}'", field="config.dataset")
    return config


def _check_fields(*, name: str, adapter: str, concurrency_limit: int, timeout_s: float) -> None:
    if not name:
        raise BackendConfigError("a name is required", field="name")
    if len(name) > NAME_MAX_LENGTH:
        raise BackendConfigError(f"longer than {NAME_MAX_LENGTH} characters", field="name")
    if adapter not in Backend.Adapter.values:
        raise BackendConfigError(
            f"unknown adapter '{adapter}' (expected one of: {', '.join(Backend.Adapter.values)})",
            field="adapter",
        )
    if not 1 <= concurrency_limit <= MAX_CONCURRENCY:
        raise BackendConfigError(
            f"must be between 1 and {MAX_CONCURRENCY}, got {concurrency_limit}",
            field="concurrency_limit",
        )
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise BackendConfigError(
            f"must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, got {timeout_s:g}",
            field="timeout_s",
        )


def _name_taken(name: str) -> BackendConfigError:
    return BackendConfigError(f"a backend named '{name}' already exists", field="name")


@transaction.atomic
def backend_create(
    *,
    name: str,
    adapter: str,
    config: dict[str, Any],
    api_key_env: str = "",
    concurrency_limit: int = 4,
    timeout_s: float = 60.0,
    description: str = "",
    created_by: User | None = None,
) -> Backend:
    """Register a backend; raises `BackendConfigError` naming the field that is wrong."""
    name = name.strip()
    _check_fields(
        name=name, adapter=adapter, concurrency_limit=concurrency_limit, timeout_s=timeout_s
    )
    config = _check_config(adapter, config)
    api_key_env = validate_api_key_env(api_key_env)
    if Backend._base_manager.filter(name=name).exists():
        raise _name_taken(name)
    try:
        with transaction.atomic():
            return Backend.objects.create(
                name=name,
                adapter=adapter,
                config=config,
                api_key_env=api_key_env,
                concurrency_limit=concurrency_limit,
                timeout_s=timeout_s,
                description=description,
                created_by=created_by,
            )
    except IntegrityError:  # created concurrently since the check
        raise _name_taken(name) from None


@transaction.atomic
def backend_update(
    *,
    backend: Backend,
    name: str = _UNSET,
    adapter: str = _UNSET,
    config: dict[str, Any] = _UNSET,
    api_key_env: str = _UNSET,
    concurrency_limit: int = _UNSET,
    timeout_s: float = _UNSET,
    description: str = _UNSET,
    active: bool = _UNSET,
) -> Backend:
    """Change the given fields (others keep their value); all are validated together."""
    locked = Backend.objects.select_for_update().get(pk=backend.pk)
    values: dict[str, Any] = {
        "name": locked.name if name is _UNSET else name.strip(),
        "adapter": locked.adapter if adapter is _UNSET else adapter,
        "config": locked.config if config is _UNSET else config,
        "api_key_env": locked.api_key_env if api_key_env is _UNSET else api_key_env,
        "concurrency_limit": (
            locked.concurrency_limit if concurrency_limit is _UNSET else concurrency_limit
        ),
        "timeout_s": locked.timeout_s if timeout_s is _UNSET else timeout_s,
        "description": locked.description if description is _UNSET else description,
        "active": locked.active if active is _UNSET else active,
    }
    _check_fields(
        name=values["name"],
        adapter=values["adapter"],
        concurrency_limit=values["concurrency_limit"],
        timeout_s=values["timeout_s"],
    )
    values["config"] = _check_config(values["adapter"], values["config"])
    values["api_key_env"] = validate_api_key_env(values["api_key_env"])
    if Backend._base_manager.filter(name=values["name"]).exclude(pk=locked.pk).exists():
        raise _name_taken(values["name"])
    for key, value in values.items():
        setattr(locked, key, value)
    try:
        with transaction.atomic():
            locked.save()
    except IntegrityError:
        raise _name_taken(values["name"]) from None
    return locked


def backend_deactivate(*, backend: Backend) -> Backend:
    """Hide a backend from new campaigns and calls; its dialogues stay (no delete)."""
    Backend.objects.filter(pk=backend.pk).update(active=False)
    backend.refresh_from_db()
    return backend


def backend_activate(*, backend: Backend) -> Backend:
    Backend.objects.filter(pk=backend.pk).update(active=True)
    backend.refresh_from_db()
    return backend
