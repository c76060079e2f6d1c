from django.contrib import admin

from chat.models import (
    Backend,
    Campaign,
    CampaignBackend,
    Dataset,
    Dialogue,
    Participant,
    Sample,
    Skill,
    Turn,
)
from core.admin import WorkspaceOwnedAdmin


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ("key", "name_zh", "name_en")


@admin.register(Backend)
class BackendAdmin(WorkspaceOwnedAdmin):
    list_display = ("name", "adapter", "active", "concurrency_limit", "timeout_s", "created_at")
    list_filter = ("adapter", "active")
    search_fields = ("name",)


@admin.register(Dataset)
class DatasetAdmin(WorkspaceOwnedAdmin):
    list_display = ("name", "skill", "language", "source_format", "sample_count", "created_at")
    list_filter = ("skill", "language", "source_format")
    search_fields = ("name",)


@admin.register(Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ("dataset", "index", "external_id", "skill")
    list_filter = ("dataset", "skill")
    search_fields = ("external_id",)
    list_select_related = ("dataset", "skill")


class CampaignBackendInline(admin.TabularInline):
    model = CampaignBackend
    extra = 1


@admin.register(Campaign)
class CampaignAdmin(WorkspaceOwnedAdmin):
    list_display = ("name", "mode", "status", "max_turns", "created_at")
    list_filter = ("mode", "status")
    filter_horizontal = ("skills", "datasets")
    inlines = [CampaignBackendInline]
    readonly_fields = ("invite_token", "completion_code")


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ("campaign", "user", "external_id", "source", "flagged", "violations")
    list_filter = ("campaign", "flagged")


class TurnInline(admin.TabularInline):
    model = Turn
    extra = 0
    fields = ("index", "speaker", "text", "latency_ms")


@admin.register(Dialogue)
class DialogueAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "backend", "skill", "worker", "status", "created_at")
    list_filter = ("campaign", "status", "skill", "backend")
    inlines = [TurnInline]
    list_select_related = ("campaign", "backend", "skill", "worker")
