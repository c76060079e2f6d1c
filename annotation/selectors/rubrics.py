"""Reading rubrics: the list with versions, one version's questions, lookups by `KEY[:VERSION]`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import groupby

from django.db.models import Exists, OuterRef, QuerySet

from annotation.models import Rating, RatingJob, Rubric
from annotation.rubric_spec import Question, RubricSpec
from core.i18n import pick_text


class RubricLookupError(LookupError):
    """No rubric matches a `KEY[:VERSION]` reference; the message says which."""


@dataclass(frozen=True)
class RubricFamily:
    """All versions of one rubric key, newest first."""

    key: str
    versions: list[Rubric]
    title: str  # in the requested language when the rubric has it

    @property
    def latest(self) -> Rubric:
        return self.versions[0]


def rubric_list() -> QuerySet[Rubric]:
    """Every rubric version, with `in_use` (a job refers to it), newest version first per key."""
    return Rubric.objects.annotate(
        in_use=Exists(RatingJob.objects.filter(rubric=OuterRef("pk")))
    ).order_by("key", "-version")


def rubric_families(*, language: str = "zh-hans") -> list[RubricFamily]:
    families = []
    for key, group in groupby(rubric_list(), key=lambda r: r.key):
        versions = list(group)
        families.append(
            RubricFamily(key=key, versions=versions, title=localized(versions[0].title, language))
        )
    return families


def localized(texts: Mapping[str, str] | None, language: str) -> str:
    """The text in `language`, with the fallbacks of `core.i18n.pick_text`; "" when none."""
    return pick_text(texts, language)


def rubric_in_use(*, rubric: Rubric) -> bool:
    """A version is frozen once a rating job uses it (its raters see these questions, and the
    ratings they give are keyed by them) or, for safety, once any rating refers to it."""
    return (
        RatingJob.objects.filter(rubric=rubric).exists()
        or Rating.objects.filter(assignment__job__rubric=rubric).exists()
    )


def rubric_is_frozen(*, rubric: Rubric) -> bool:
    """Presets ship with the platform and are never edited in place; used versions neither."""
    return rubric.is_preset or rubric_in_use(rubric=rubric)


def rubric_latest_version(*, key: str) -> int:
    latest = Rubric.objects.filter(key=key).order_by("-version").values_list("version", flat=True)
    return latest.first() or 0


def rubric_by_ref(ref: str) -> Rubric:
    """`KEY` (the latest version) or `KEY:VERSION`."""
    key, _, version = ref.strip().partition(":")
    if not key:
        raise RubricLookupError("a rubric key is required (KEY or KEY:VERSION)")
    versions = Rubric.objects.filter(key=key)
    if version:
        if not version.isdigit():
            raise RubricLookupError(f"version {version!r} of rubric {key!r} is not a number")
        found = versions.filter(version=int(version)).first()
        if found is None:
            known = ", ".join(str(v) for v in versions.values_list("version", flat=True))
            raise RubricLookupError(
                f"rubric {key!r} has no version {version}"
                + (f" (versions: {known})" if known else "")
            )
        return found
    found = versions.order_by("-version").first()
    if found is None:
        keys = ", ".join(sorted(set(Rubric.objects.values_list("key", flat=True))))
        raise RubricLookupError(f"no rubric with key {key!r} (rubrics: {keys})")
    return found


@dataclass(frozen=True)
class QuestionView:
    """A question with its texts split per language, for the rubric page."""

    question: Question
    label_zh: str
    label_en: str
    label_ja: str
    help_zh: str
    help_en: str
    help_ja: str
    levels: list[tuple[str, str, str, str]]  # value, zh, en, ja
    options: list[tuple[int, str, str, str, float | None]]  # index, zh, en, ja, score


def rubric_question_views(*, spec: RubricSpec) -> list[QuestionView]:
    def pair(texts: Mapping[str, str]) -> tuple[str, str, str]:
        return texts.get("zh-hans", ""), texts.get("en", ""), texts.get("ja", "")

    views = []
    for q in spec.questions:
        levels = sorted(q.levels.items(), key=lambda item: float(item[0]))  # "1.5" on half points
        views.append(
            QuestionView(
                question=q,
                label_zh=pair(q.label)[0],
                label_en=pair(q.label)[1],
                label_ja=pair(q.label)[2],
                help_zh=pair(q.help)[0],
                help_en=pair(q.help)[1],
                help_ja=pair(q.help)[2],
                levels=[(value, *pair(texts)) for value, texts in levels],
                options=[(i, *pair(o.label), o.score) for i, o in enumerate(q.options)],
            )
        )
    return views
