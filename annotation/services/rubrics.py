"""Creating and editing rubrics. A version in use (or a preset) is immutable: an edit of it
becomes the next version of the same key, so ratings always refer to the questions they
answered."""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from annotation.models import Rubric
from annotation.rubric_spec import VERSION_MAX, RubricSpecError, validate_spec
from annotation.selectors.rubrics import rubric_is_frozen, rubric_latest_version


def _checked(spec: Any, *, key: str | None = None, version: int) -> dict[str, Any]:
    """The spec with its version set, validated; `key` (when given) must not change."""
    if not isinstance(spec, dict):
        raise RubricSpecError([("spec", "must be a JSON object")])
    spec = copy.deepcopy(spec)
    if key is not None and spec.get("key") != key:
        raise RubricSpecError(
            [("key", f'cannot change "{key}" in a new version; copy the rubric to use a new key')]
        )
    given = spec.get("version")
    if given is not None and (
        isinstance(given, bool) or not isinstance(given, int) or not 1 <= given <= VERSION_MAX
    ):
        # The platform numbers versions itself, but nonsense in the field is refused, not hidden.
        raise RubricSpecError([("version", f"must be an integer from 1 to {VERSION_MAX}")])
    spec["version"] = version
    validate_spec(spec)
    return spec


def _save_new(*, spec: dict[str, Any], created_by: User | None) -> Rubric:
    try:
        with transaction.atomic():
            return Rubric.objects.create(
                key=spec["key"],
                version=spec["version"],
                title=spec.get("title", {}),
                spec=spec,
                created_by=created_by,
            )
    except IntegrityError:
        raise RubricSpecError(
            [("version", f"{spec['key']} v{spec['version']} was just created by someone else")]
        ) from None


@transaction.atomic
def rubric_create(*, spec: Any, created_by: User | None = None) -> Rubric:
    """A new rubric key, version 1. Raises RubricSpecError (every problem, by path)."""
    checked = _checked(spec, version=1)
    if Rubric.objects.filter(key=checked["key"]).exists():
        raise RubricSpecError(
            [("key", f'a rubric "{checked["key"]}" exists; edit it to make a new version')]
        )
    return _save_new(spec=checked, created_by=created_by)


@transaction.atomic
def rubric_new_version(*, rubric: Rubric, spec: Any, created_by: User | None = None) -> Rubric:
    """The next version of `rubric`'s key (after the latest one), with `spec`."""
    # Lock the key's versions so that two editors saving at once get v+1 and v+2, not a clash.
    list(Rubric.objects.select_for_update().filter(key=rubric.key).values_list("pk", flat=True))
    checked = _checked(spec, key=rubric.key, version=rubric_latest_version(key=rubric.key) + 1)
    return _save_new(spec=checked, created_by=created_by)


@transaction.atomic
def rubric_edit(*, rubric: Rubric, spec: Any, created_by: User | None = None) -> Rubric:
    """Save an edit: in place while the version is unused and not a preset, else as the next
    version. Returns the rubric that holds the edit."""
    locked = Rubric.objects.select_for_update().get(pk=rubric.pk)
    if rubric_is_frozen(rubric=locked):
        return rubric_new_version(rubric=locked, spec=spec, created_by=created_by)
    checked = _checked(spec, key=locked.key, version=locked.version)
    locked.spec = checked
    locked.title = checked.get("title", {})
    locked.save(update_fields=["spec", "title"])
    return locked
