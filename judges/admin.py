from django.contrib import admin

from core.admin import WorkspaceOwnedAdmin
from judges.models import Judge


@admin.register(Judge)
class JudgeAdmin(WorkspaceOwnedAdmin):
    list_display = ("key", "version", "name", "backend", "rubric", "mode")
    search_fields = ("key", "name")
