"""Campaigns: create, update, choose backends (with blind aliases), activate, close, completion.

Every write validates first and raises `CampaignError` (a `core.errors.ServiceError`) with a dict
`{field: [messages]}` naming what is wrong; nothing is written when anything is wrong. The
field names are those of `campaign_create`'s arguments, so the campaign form and the API map
the messages onto their own fields.
"""

from __future__ import annotations

import copy
import string
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import (
    Backend,
    Campaign,
    CampaignBackend,
    Dataset,
    Participant,
    Sample,
    Skill,
    default_acceptability,
)
from chat.selectors.collection import registered_turn_limit
from chat.services import openings
from chat.services.scenario_assignment import WorkerStatus, worker_status
from core.errors import ServiceError
from core.i18n import INTERFACE_LANGUAGES

# Options `campaign_create` / `campaign_update` accept besides name, mode, skills, backends and
# datasets; each is a `Campaign` field of the same name.
CAMPAIGN_OPTIONS = (
    "quota_per_cell",
    "max_turns",
    "min_turns",
    "instructions",
    "rate_while_chatting",
    "per_worker_cap",
    "reservation_timeout_minutes",
    "worker_session_hours",
    "completion_url",
    "acceptability",
    "interface_language",
    "opening_dataset",
    "opening_count",
    "opening_seed",
    "vote_timing",
    "reveal_after_vote",
    "pairing",
    "status",
)
# The modes whose dialogues crowdworkers collect live (one system, or two side by side).
LIVE_MODES = (Campaign.Mode.INTERACTIVE, Campaign.Mode.SIDE_BY_SIDE)
# The options that say which openings are drawn (see `chat.services.openings`).
OPENING_OPTIONS = ("opening_dataset", "opening_count", "opening_seed")
INSTRUCTION_LANGUAGES = ("zh-hans", "en", "ja")
MAX_TURNS_LIMIT = 100
NAME_MAX_LENGTH = 160  # Campaign.name
ALIAS_MAX_LENGTH = 60  # CampaignBackend.alias
# Query parameter the completion code is appended as (Prolific's convention; MTurk external
# questions and most survey tools accept any parameter name, so one convention serves all).
COMPLETION_CODE_PARAM = "cc"

# Types of the acceptability settings (see `chat.models.default_acceptability`).
_ACCEPTABILITY_TYPES: dict[str, type[Any]] = {
    "min_chars": int,
    "min_words": int,
    "reject_all_caps": bool,
    "reject_repeats": bool,
    "repeat_similarity": float,
    "reject_grounding_copy": bool,
    "grounding_copy_chars": int,
    "safety_words": list,
    "flag_threshold": int,
}


# "Model" in a campaign's crowdworker language, for the default blind aliases ("" = Chinese).
ALIAS_WORDS = {"": "模型", "zh-hans": "模型", "en": "Model", "ja": "モデル"}


def default_alias(position: int, language: str = "") -> str:
    """The blind alias of the n-th backend (0-based): 模型 A, 模型 B, …, 模型 Z, 模型 AA, …,
    or モデル A … / Model A … when the campaign fixes its workers' language."""
    letters = string.ascii_uppercase
    label = ""
    position += 1
    while position:
        position, rest = divmod(position - 1, 26)
        label = letters[rest] + label
    return f"{ALIAS_WORDS.get(language, ALIAS_WORDS[''])} {label}"


class CampaignError(ServiceError):
    """A campaign write refused; ``errors`` maps each refused field to its message(s)."""

    location_style = "prefix"


class _Errors:
    """Collects `{field: [messages]}` so one call reports every problem at once."""

    def __init__(self) -> None:
        self.by_field: dict[str, list[str]] = {}

    def add(self, field: str, message: str) -> None:
        self.by_field.setdefault(field, []).append(message)

    def raise_if_any(self) -> None:
        if self.by_field:
            raise CampaignError.for_fields(self.by_field)


def acceptability_settings(campaign: Campaign) -> dict[str, Any]:
    """The campaign's acceptability settings, defaults filled in for keys it does not set."""
    return {**default_acceptability(), **(campaign.acceptability or {})}


def _check_acceptability(value: Any, errors: _Errors) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        errors.add("acceptability", _("验收规则必须是一个 JSON 对象。"))
        return {}
    cleaned: dict[str, Any] = {}
    for key, item in value.items():
        expected = _ACCEPTABILITY_TYPES.get(key)
        if expected is None:
            errors.add(
                "acceptability",
                _("未知的验收规则「%(key)s」（可用：%(known)s）。")
                % {"key": key, "known": ", ".join(_ACCEPTABILITY_TYPES)},
            )
            continue
        if expected is float and isinstance(item, int) and not isinstance(item, bool):
            item = float(item)
        if not isinstance(item, expected) or (expected is int and isinstance(item, bool)):
            errors.add(
                "acceptability",
                _("验收规则「%(key)s」的类型应为 %(type)s。")
                % {"key": key, "type": expected.__name__},
            )
            continue
        if expected is int and item < 0:
            errors.add("acceptability", _("验收规则「%(key)s」不能为负数。") % {"key": key})
            continue
        if key == "repeat_similarity" and not 0 < item <= 1:
            errors.add("acceptability", _("repeat_similarity 必须在 0 到 1 之间（不含 0）。"))
            continue
        if key == "safety_words":
            if not all(isinstance(word, str) for word in item):
                errors.add("acceptability", _("safety_words 必须是字符串列表。"))
                continue
            item = [word.strip() for word in item if word.strip()]
        cleaned[key] = item
    return cleaned


def _check_instructions(value: Any, skill_keys: set[str], errors: _Errors) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        errors.add("instructions", _("说明必须是 {技能: {语言: 文本}} 形式的对象。"))
        return {}
    cleaned: dict[str, dict[str, str]] = {}
    for skill, texts in value.items():
        if skill not in skill_keys:
            errors.add(
                "instructions",
                _("说明中的技能「%(skill)s」不在本活动的技能中。") % {"skill": skill},
            )
            continue
        if not isinstance(texts, Mapping):
            errors.add(
                "instructions",
                _("技能「%(skill)s」的说明必须是 {语言: 文本} 对象。") % {"skill": skill},
            )
            continue
        kept: dict[str, str] = {}
        for language, text in texts.items():
            if language not in INSTRUCTION_LANGUAGES:
                errors.add(
                    "instructions",
                    _("技能「%(skill)s」的说明语言「%(language)s」未知（可用：%(known)s）。")
                    % {
                        "skill": skill,
                        "language": language,
                        "known": ", ".join(INSTRUCTION_LANGUAGES),
                    },
                )
            elif not isinstance(text, str):
                errors.add(
                    "instructions",
                    _("技能「%(skill)s」的 %(language)s 说明必须是文本。")
                    % {"skill": skill, "language": language},
                )
            elif text.strip():
                kept[language] = text.strip()
        if kept:
            cleaned[skill] = kept
    return cleaned


def _check_int(
    options: dict[str, Any],
    field: str,
    errors: _Errors,
    *,
    minimum: int,
    maximum: int | None = None,
) -> None:
    if field not in options:
        return
    value = options[field]
    if not isinstance(value, int) or isinstance(value, bool):
        errors.add(field, _("必须是整数。"))
    elif value < minimum:
        errors.add(field, _("不能小于 %(minimum)d。") % {"minimum": minimum})
    elif maximum is not None and value > maximum:
        errors.add(field, _("不能大于 %(maximum)d。") % {"maximum": maximum})


def _check_options(
    options: dict[str, Any], *, skill_keys: set[str], errors: _Errors
) -> dict[str, Any]:
    """Validate the campaign options given; return them cleaned (only the keys given)."""
    unknown = set(options) - set(CAMPAIGN_OPTIONS)
    if unknown:
        raise TypeError(f"unknown campaign option(s): {', '.join(sorted(unknown))}")
    cleaned = dict(options)
    _check_int(cleaned, "quota_per_cell", errors, minimum=0)
    _check_int(cleaned, "max_turns", errors, minimum=1, maximum=MAX_TURNS_LIMIT)
    _check_int(cleaned, "min_turns", errors, minimum=1, maximum=MAX_TURNS_LIMIT)
    _check_int(cleaned, "per_worker_cap", errors, minimum=0)
    _check_int(cleaned, "reservation_timeout_minutes", errors, minimum=1, maximum=7 * 24 * 60)
    _check_int(cleaned, "worker_session_hours", errors, minimum=1, maximum=720)
    _check_int(cleaned, "opening_count", errors, minimum=1, maximum=openings.MAX_OPENINGS)
    _check_int(cleaned, "opening_seed", errors, minimum=-(2**31), maximum=2**31 - 1)
    if cleaned.get("opening_dataset") is not None and not isinstance(
        cleaned["opening_dataset"], Dataset
    ):
        errors.add("opening_dataset", _("请选择一个数据集。"))
    for flag in ("rate_while_chatting", "reveal_after_vote"):
        if flag in cleaned and not isinstance(cleaned[flag], bool):
            errors.add(flag, _("必须是布尔值。"))
    for field, choices in (
        ("vote_timing", Campaign.VoteTiming),
        ("pairing", Campaign.Pairing),
    ):
        if field in cleaned and cleaned[field] not in choices.values:
            errors.add(
                field,
                _("未知的取值「%(value)s」（可用：%(known)s）。")
                % {"value": cleaned[field], "known": ", ".join(choices.values)},
            )
    if "instructions" in cleaned:
        cleaned["instructions"] = _check_instructions(cleaned["instructions"], skill_keys, errors)
    if "acceptability" in cleaned:
        cleaned["acceptability"] = {
            **default_acceptability(),
            **_check_acceptability(cleaned["acceptability"], errors),
        }
    if "completion_url" in cleaned:
        url = (cleaned["completion_url"] or "").strip()
        if url:
            try:
                URLValidator(schemes=["http", "https"])(url)
            except ValidationError:
                errors.add("completion_url", _("不是有效的 http(s) 网址：%(url)s") % {"url": url})
        cleaned["completion_url"] = url
    if "interface_language" in cleaned:
        language = cleaned["interface_language"] or ""
        if language not in INTERFACE_LANGUAGES and language != "":
            errors.add(
                "interface_language",
                _("未知的界面语言「%(language)s」（可用：%(known)s，留空由浏览器决定）。")
                % {"language": language, "known": ", ".join(INTERFACE_LANGUAGES)},
            )
        cleaned["interface_language"] = language
    if "status" in cleaned and cleaned["status"] not in Campaign.Status.values:
        errors.add(
            "status",
            _("未知的状态「%(status)s」（可用：%(known)s）。")
            % {"status": cleaned["status"], "known": ", ".join(Campaign.Status.values)},
        )
    return cleaned


def _check_openings(
    *,
    campaign: Campaign | None,
    mode: str,
    mode_changed: bool,
    cleaned: dict[str, Any],
    errors: _Errors,
) -> list[openings.DrawnOpening] | None:
    """The openings to store after the write: a new draw when the dataset, count or seed
    change (an empty list turns the option off), None when the stored set stays. `campaign`
    is the campaign as stored (None when creating one)."""
    if not any(key in cleaned for key in OPENING_OPTIONS):
        if campaign is not None and campaign.opening_dataset_id and mode_changed:
            errors.add("opening_dataset", _("只有交互采集的活动才能使用数据集中的起始话语。"))
        return None
    if any(key in errors.by_field for key in OPENING_OPTIONS):
        return None
    current: dict[str, Any] = {
        "opening_dataset": campaign.opening_dataset if campaign is not None else None,
        "opening_count": campaign.opening_count if campaign is not None else 20,
        "opening_seed": campaign.opening_seed if campaign is not None else 0,
    }
    wanted = {key: cleaned.get(key, current[key]) for key in OPENING_OPTIONS}
    if campaign is not None and wanted == current and not mode_changed:
        return None
    dataset = wanted["opening_dataset"]
    if dataset is not None and mode not in LIVE_MODES:
        errors.add("opening_dataset", _("只有交互采集的活动才能使用数据集中的起始话语。"))
        return None
    if campaign is not None and wanted != current and openings.openings_in_use(campaign=campaign):
        errors.add(
            "opening_dataset",
            _("已有对话用过本活动抽取的起始话语，不能再更改数据集、数量或随机种子。"),
        )
        return None
    if dataset is None:
        return []
    try:
        return openings.openings_draw(
            dataset=dataset, count=wanted["opening_count"], seed=wanted["opening_seed"]
        )
    except openings.OpeningDrawError as exc:
        errors.add(exc.field or "opening_dataset", exc.message)
        return None


def _check_turns(max_turns: Any, min_turns: Any, errors: _Errors, *, campaign: Campaign) -> None:
    """`campaign` carries the settings being saved (unsaved when being created)."""
    if "max_turns" in errors.by_field or "min_turns" in errors.by_field:
        return
    if min_turns > max_turns:
        errors.add(
            "min_turns",
            _("最少轮数（%(min)d）不能大于最多轮数（%(max)d）。")
            % {"min": min_turns, "max": max_turns},
        )
    problem = _rubric_turns_problem(campaign, max_turns)
    if problem:
        errors.add("max_turns", problem)


def _rubric_turns_problem(campaign: Campaign, max_turns: int) -> str:
    """Why `max_turns` is too few for the rubric rated while chatting (decision 54).

    Seed 001's multi-turn score divides by a fixed number of turns, the rubric's `max_turns`
    (5: "20 × 2 × 4 × 5 × 5 = 4000"); a campaign that allowed fewer would cap every system below
    100 (max 3 of 5 turns: at most 60). Such a limit is refused rather than the denominator
    rescaled, so a score always means the rubric's protocol; to run shorter tests, rate with a
    copy of the rubric whose `max_turns` is lower.
    """
    if not campaign.rate_while_chatting:
        return ""
    required = registered_turn_limit(campaign)
    if required is None or max_turns >= required:
        return ""
    return _(
        "边聊边评按量表给 %(n)d 轮回复打分，满分也按 %(n)d 轮计算："
        "最多轮数（%(max)d）不能少于 %(n)d（想聊得更短，请用 max_turns 更小的量表）。"
    ) % {"n": required, "max": max_turns}


def _resolve_skills(skills: Sequence[str], errors: _Errors) -> list[Skill]:
    known = {skill.key: skill for skill in Skill.objects.all()}
    resolved: list[Skill] = []
    for key in skills:
        if key not in known:
            errors.add(
                "skills",
                _("未知的技能「%(skill)s」（可用：%(known)s）。")
                % {"skill": key, "known": ", ".join(known)},
            )
        elif known[key] not in resolved:
            resolved.append(known[key])
    return resolved


def _check_mode(mode: str, errors: _Errors) -> None:
    if mode not in Campaign.Mode.values:
        errors.add(
            "mode",
            _("未知的模式「%(mode)s」（可用：%(known)s）。")
            % {"mode": mode, "known": ", ".join(Campaign.Mode.values)},
        )


def _check_backends(mode: str, backends: Sequence[Backend], errors: _Errors) -> None:
    seen: set[int] = set()
    for backend in backends:
        if backend.pk in seen:
            errors.add("backends", _("模型后端「%(name)s」重复。") % {"name": backend.name})
        seen.add(backend.pk)
        if mode != Campaign.Mode.IMPORTED and backend.adapter == Backend.Adapter.IMPORTED:
            errors.add(
                "backends",
                _("模型后端「%(name)s」是导入的系统，不能调用，不能用于交互采集或静态生成。")
                % {"name": backend.name},
            )


def _check_datasets(datasets: Sequence[Dataset], skills: list[Skill], errors: _Errors) -> None:
    skill_ids = {skill.pk for skill in skills}
    for dataset in datasets:
        if dataset.skill_id is not None:
            if dataset.skill_id not in skill_ids:
                errors.add(
                    "datasets",
                    _("数据集「%(dataset)s」的技能「%(skill)s」不在本活动的技能中。")
                    % {"dataset": dataset.name, "skill": cast(Skill, dataset.skill).key},
                )
        elif not Sample.objects.filter(dataset=dataset, skill_id__in=skill_ids).exists():
            errors.add(
                "datasets",
                _("数据集「%(dataset)s」中没有属于本活动技能的样本。") % {"dataset": dataset.name},
            )


def _check_aliases(
    backends: Sequence[Backend],
    aliases: Sequence[str] | None,
    errors: _Errors,
    language: str = "",
) -> list[str]:
    """Aliases parallel to `backends`; blanks get the next free "模型 X"."""
    given = [(alias or "").strip() for alias in (aliases or [])]
    if len(given) > len(backends):
        errors.add("aliases", _("别名比模型后端多。"))
        return []
    given += [""] * (len(backends) - len(given))
    seen: set[str] = set()
    for alias in given:
        if not alias:
            continue
        if len(alias) > ALIAS_MAX_LENGTH:
            errors.add(
                "aliases",
                _("别名「%(alias)s」超过 %(max)d 个字符。")
                % {"alias": alias, "max": ALIAS_MAX_LENGTH},
            )
        if alias in seen:
            errors.add("aliases", _("别名「%(alias)s」重复。") % {"alias": alias})
        seen.add(alias)
    position = 0
    filled: list[str] = []
    for alias in given:
        if not alias:
            while default_alias(position, language) in seen:
                position += 1
            alias = default_alias(position, language)
            seen.add(alias)
        filled.append(alias)
    return filled


def _check_name(name: str, errors: _Errors, *, exclude_pk: int | None = None) -> str:
    name = (name or "").strip()
    if not name:
        errors.add("name", _("请填写名称。"))
    elif len(name) > NAME_MAX_LENGTH:
        errors.add("name", _("名称不能超过 %(max)d 个字符。") % {"max": NAME_MAX_LENGTH})
    # Names are unique across the deployment, not per workspace: look past the current one.
    elif Campaign._base_manager.filter(name=name).exclude(pk=exclude_pk).exists():  # type: ignore[misc]  # None: a new campaign, nothing to exclude
        errors.add("name", _("已有名为「%(name)s」的评测活动。") % {"name": name})
    return name


def campaign_readiness_problems(campaign: Campaign) -> list[str]:
    """Why the campaign cannot be opened to workers yet (empty when it can)."""
    problems: list[str] = []
    backends = [cb.backend for cb in campaign.campaign_backends.select_related("backend")]
    if campaign.mode == Campaign.Mode.IMPORTED:
        return [_("导入的活动不接受工作者，无需启动。")]
    if not backends:
        problems.append(_("请至少选择一个模型后端。"))
    for backend in backends:
        if not backend.active:
            problems.append(_("模型后端「%(name)s」已停用。") % {"name": backend.name})
    skills = list(campaign.skills.all())
    if not skills:
        problems.append(_("请至少选择一个技能。"))
    turns_problem = _rubric_turns_problem(campaign, campaign.max_turns)
    if turns_problem:
        problems.append(turns_problem)
    if campaign.mode == Campaign.Mode.SIDE_BY_SIDE and len(backends) < 2:
        problems.append(_("并排对比至少需要两个模型后端。"))
    if campaign.mode == Campaign.Mode.SIDE_BY_SIDE and campaign.rate_while_chatting:
        problems.append(_("并排对比不支持聊天时逐轮打分（工作者逐轮投票）。"))
    if campaign.mode in LIVE_MODES:
        datasets = list(campaign.datasets.all())
        if not datasets:
            problems.append(_("请至少选择一个场景数据集。"))
        else:
            with_scenarios = set(
                Sample.objects.filter(dataset__in=datasets, skill__in=skills)
                .values_list("skill__key", flat=True)
                .distinct()
            )
            for skill in skills:
                if skill.key not in with_scenarios:
                    problems.append(
                        _("技能「%(skill)s」在所选数据集中没有场景。") % {"skill": skill.key}
                    )
    return problems


def _with_options(campaign: Campaign, cleaned: dict[str, Any]) -> Campaign:
    """A copy of the campaign with the rate-while-chatting setting being saved (not saved)."""
    changed = copy.copy(campaign)
    if cleaned.get("rate_while_chatting") is not None:
        changed.rate_while_chatting = cleaned["rate_while_chatting"] is True
    return changed


def _check_can_activate(campaign: Campaign) -> None:
    problems = campaign_readiness_problems(campaign)
    if problems:
        raise CampaignError.for_fields({"status": problems})


@transaction.atomic
def campaign_create(
    *,
    name: str,
    mode: str,
    skills: list[str],
    backends: list[Backend],
    datasets: list[Dataset],
    created_by: User | None,
    aliases: Sequence[str] | None = None,
    **options: Any,
) -> Campaign:
    """Create a campaign over `backends` (in alias order) and `datasets` for `skills` (keys).

    `options` are `Campaign` fields (see `CAMPAIGN_OPTIONS`); an `opening_dataset` draws the
    campaign's openings (`chat.services.openings`). `aliases`, parallel to
    `backends`, names them for workers; blanks become 模型 A, 模型 B, … in order (モデル A …
    or Model A … when `interface_language` fixes the workers' language). A campaign created
    with `status="active"` must pass the activation checks.
    """
    errors = _Errors()
    name = _check_name(name, errors)
    _check_mode(mode, errors)
    skill_rows = _resolve_skills(skills, errors)
    _check_backends(mode, backends, errors)
    _check_datasets(datasets, skill_rows, errors)
    cleaned = _check_options(options, skill_keys={s.key for s in skill_rows}, errors=errors)
    language = cleaned.get("interface_language", "")
    alias_list = _check_aliases(backends, aliases, errors, language)
    _check_turns(
        cleaned.get("max_turns", 10),
        cleaned.get("min_turns", 1),
        errors,
        campaign=Campaign(rate_while_chatting=cleaned.get("rate_while_chatting") is True),
    )
    drawn = _check_openings(
        campaign=None, mode=mode, mode_changed=False, cleaned=cleaned, errors=errors
    )
    errors.raise_if_any()

    status = cleaned.pop("status", Campaign.Status.DRAFT)
    campaign = Campaign.objects.create(
        name=name, mode=mode, status=Campaign.Status.DRAFT, created_by=created_by, **cleaned
    )
    campaign.skills.set(skill_rows)
    campaign.datasets.set(datasets)
    if drawn:
        openings.campaign_openings_store(campaign=campaign, drawn=drawn)
    CampaignBackend.objects.bulk_create(
        CampaignBackend(campaign=campaign, backend=backend, alias=alias)
        for backend, alias in zip(backends, alias_list, strict=True)
    )
    if status == Campaign.Status.ACTIVE:
        _check_can_activate(campaign)
    if status != Campaign.Status.DRAFT:
        campaign.status = status
        campaign.save(update_fields=["status"])
    return campaign


@transaction.atomic
def campaign_update(
    *,
    campaign: Campaign,
    name: str | None = None,
    mode: str | None = None,
    skills: list[str] | None = None,
    datasets: list[Dataset] | None = None,
    backends: list[Backend] | None = None,
    aliases: Sequence[str] | None = None,
    **options: Any,
) -> Campaign:
    """Change a campaign's settings; arguments left as None keep their value.

    The mode cannot change once dialogues exist. `backends` (with `aliases`) go through
    `campaign_set_backends` in the same transaction; the status changes only through
    `campaign_activate` / `campaign_close`. Changing the opening dataset, count or seed
    draws the openings again, refused once a dialogue has used them.
    """
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    stored_mode = campaign.mode
    errors = _Errors()
    if "status" in options:
        raise TypeError("change the status with campaign_activate / campaign_close")
    if name is not None:
        campaign.name = _check_name(name, errors, exclude_pk=campaign.pk)
    if mode is not None and mode != campaign.mode:
        _check_mode(mode, errors)
        if campaign.dialogues.exists():
            errors.add("mode", _("已有对话的活动不能更改模式。"))
        if mode != Campaign.Mode.IMPORTED:
            backends = [cb.backend for cb in campaign.campaign_backends.select_related("backend")]
            _check_backends(mode, backends, errors)
        campaign.mode = mode
    skill_rows = (
        _resolve_skills(skills, errors) if skills is not None else list(campaign.skills.all())
    )
    if datasets is not None or skills is not None:
        _check_datasets(
            datasets if datasets is not None else list(campaign.datasets.all()), skill_rows, errors
        )
    if "instructions" not in options and skills is not None:
        # Instructions for a skill the campaign no longer has are dropped, not an error.
        keys = {s.key for s in skill_rows}
        options["instructions"] = {k: v for k, v in campaign.instructions.items() if k in keys}
    cleaned = _check_options(options, skill_keys={s.key for s in skill_rows}, errors=errors)
    _check_turns(
        cleaned.get("max_turns", campaign.max_turns),
        cleaned.get("min_turns", campaign.min_turns),
        errors,
        campaign=_with_options(campaign, cleaned),
    )
    drawn = _check_openings(
        campaign=campaign,
        mode=campaign.mode,
        mode_changed=campaign.mode != stored_mode,
        cleaned=cleaned,
        errors=errors,
    )
    errors.raise_if_any()
    for field, value in cleaned.items():
        setattr(campaign, field, value)
    campaign.save()
    if drawn is not None:
        openings.campaign_openings_store(campaign=campaign, drawn=drawn)
    if skills is not None:
        campaign.skills.set(skill_rows)
    if datasets is not None:
        campaign.datasets.set(datasets)
    if backends is not None:
        campaign_set_backends(campaign=campaign, backends=backends, aliases=aliases)
    if campaign.status == Campaign.Status.ACTIVE:
        _check_can_activate(campaign)
    return campaign


@transaction.atomic
def campaign_set_backends(
    *, campaign: Campaign, backends: list[Backend], aliases: Sequence[str] | None = None
) -> list[CampaignBackend]:
    """Make `backends` the campaign's backends, in this order.

    A backend kept keeps its alias unless `aliases` (parallel to `backends`) gives a new one; a
    new backend gets the next free 模型 X. A backend that already has dialogues in the campaign
    cannot be removed (its dialogues would lose their alias).
    """
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    errors = _Errors()
    _check_backends(campaign.mode, backends, errors)
    current = {cb.backend_id: cb for cb in campaign.campaign_backends.select_related("backend")}
    kept_ids = {backend.pk for backend in backends}
    for backend_id, cb in current.items():
        if backend_id not in kept_ids:
            count = campaign.dialogues.filter(backend_id=backend_id).count()
            if count:
                errors.add(
                    "backends",
                    _("模型后端「%(name)s」在本活动中已有 %(count)d 个对话，不能移除。")
                    % {"name": cb.backend.name, "count": count},
                )
    given = list(aliases or [])
    given += [""] * (len(backends) - len(given))
    merged = [
        alias or (current[backend.pk].alias if backend.pk in current else "")
        for backend, alias in zip(backends, given, strict=False)
    ]
    alias_list = _check_aliases(backends, merged, errors, campaign.interface_language)
    errors.raise_if_any()

    campaign.campaign_backends.exclude(backend_id__in=kept_ids).delete()
    # Aliases are unique per campaign: park the kept rows on temporary aliases first so that
    # swapping two aliases does not collide half-way.
    for cb in campaign.campaign_backends.all():
        CampaignBackend.objects.filter(pk=cb.pk).update(alias=f"~{uuid.uuid4().hex}")
    rows: list[CampaignBackend] = []
    for backend, alias in zip(backends, alias_list, strict=True):
        cb, _created = CampaignBackend.objects.update_or_create(
            campaign=campaign, backend=backend, defaults={"alias": alias}
        )
        rows.append(cb)
    if campaign.status == Campaign.Status.ACTIVE:
        _check_can_activate(campaign)
    return rows


@transaction.atomic
def campaign_activate(*, campaign: Campaign) -> Campaign:
    """Open the campaign to workers (from draft, or re-open a closed one)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    _check_can_activate(campaign)
    campaign.status = Campaign.Status.ACTIVE
    campaign.save(update_fields=["status"])
    return campaign


@transaction.atomic
def campaign_close(*, campaign: Campaign) -> Campaign:
    """Stop assigning work. Dialogues in progress may still be finished and submitted."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    campaign.status = Campaign.Status.CLOSED
    campaign.save(update_fields=["status"])
    return campaign


# --- Completion ---


@dataclass(frozen=True)
class Completion:
    code: str
    redirect_url: str | None


def completion_url_with_code(url: str, code: str) -> str:
    """`url` with `cc=<code>` added to its query (an existing `cc` is replaced)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "cc"]
    query.append((COMPLETION_CODE_PARAM, code))
    return urlunsplit(parts._replace(query=urlencode(query)))


def completion_for(
    *, participant: Participant, status: WorkerStatus | None = None
) -> Completion | None:
    """The completion code (and the site's completion URL carrying it) once the worker has
    earned it: after their first submitted dialogue, whether or not more work remains, so a
    worker may stop after any dialogue (see `WorkerStatus.earned`).

    None while not earned (nothing submitted, a dialogue returned for re-collection, flagged).
    The first time it is given, `Participant.finished_at` records when. ``status`` is the
    worker's `worker_status` when the caller already has it.
    """
    status = status or worker_status(participant=participant)
    if not status.earned:
        return None
    if participant.finished_at is None:
        Participant.objects.filter(pk=participant.pk, finished_at=None).update(
            finished_at=timezone.now()
        )
        participant.refresh_from_db(fields=["finished_at"])
    campaign = participant.campaign
    url = campaign.completion_url
    return Completion(
        code=campaign.completion_code,
        redirect_url=completion_url_with_code(url, campaign.completion_code) if url else None,
    )
