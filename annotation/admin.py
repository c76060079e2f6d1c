from django.contrib import admin

from annotation.models import (
    Assignment,
    GoldItem,
    JobRater,
    Rating,
    RatingJob,
    Review,
    ReviewPolicy,
    Rubric,
)
from core.admin import WorkspaceOwnedAdmin


@admin.register(Rubric)
class RubricAdmin(WorkspaceOwnedAdmin):
    list_display = ("key", "version", "is_preset", "created_at")
    list_filter = ("is_preset",)


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("dialogue", "reviewer", "decision", "created_at")
    list_filter = ("decision",)


@admin.register(ReviewPolicy)
class ReviewPolicyAdmin(admin.ModelAdmin):
    list_display = ("campaign", "reviewers_per_dialogue", "decision_rule")


@admin.register(RatingJob)
class RatingJobAdmin(WorkspaceOwnedAdmin):
    list_display = ("name", "campaign", "rubric", "raters_per_dialogue", "status", "is_live")
    list_filter = ("status", "is_live")


@admin.register(JobRater)
class JobRaterAdmin(admin.ModelAdmin):
    list_display = ("job", "rater", "state", "reason", "updated_at")
    list_filter = ("state",)


@admin.register(GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
    list_display = ("job", "dialogue", "purpose", "created_at")
    list_filter = ("purpose",)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("job", "dialogue", "rater", "kind", "status", "order", "due_at")
    list_filter = ("job", "status", "kind")


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ("assignment", "question", "turn", "value", "updated_at")
