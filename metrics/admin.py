from django.contrib import admin

from core.admin import WorkspaceOwnedAdmin
from metrics.models import MetricRun, MetricRunChunk, MetricScore, Report


class MetricRunChunkInline(admin.TabularInline):
    model = MetricRunChunk
    extra = 0
    fields = ("backend", "skill", "family", "metrics", "status", "responses", "error")
    readonly_fields = fields
    can_delete = False


@admin.register(MetricRun)
class MetricRunAdmin(WorkspaceOwnedAdmin):
    list_display = (
        "name",
        "campaign",
        "target",
        "source",
        "status",
        "progress_done",
        "progress_total",
        "created_at",
    )
    list_filter = ("status", "source", "target")
    inlines = [MetricRunChunkInline]


@admin.register(MetricScore)
class MetricScoreAdmin(admin.ModelAdmin):
    list_display = ("run", "metric", "level", "dialogue", "turn", "backend", "group", "value")
    list_filter = ("metric", "level")
    raw_id_fields = ("run", "turn", "dialogue", "backend")


@admin.register(Report)
class ReportAdmin(WorkspaceOwnedAdmin):
    list_display = ("name", "status", "created_at", "finished_at")
