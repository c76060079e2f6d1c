"""HTML routes of the judges app."""

from core.lazy_urls import lazy_path

app_name = "judges"

urlpatterns = [
    lazy_path("", "judges.views.judge_list", name="judge-list"),
    lazy_path("new/", "judges.views.judge_create", name="judge-create"),
    lazy_path("<int:pk>/", "judges.views.judge_detail", name="judge-detail"),
    lazy_path("<int:pk>/edit/", "judges.views.judge_edit", name="judge-edit"),
    lazy_path("<int:pk>/preview/", "judges.views.judge_preview", name="judge-preview"),
    lazy_path("<int:pk>/estimate/", "judges.views.judge_estimate", name="judge-estimate"),
    lazy_path("<int:pk>/run/", "judges.views.judge_run_start", name="judge-run-start"),
    lazy_path("runs/<int:pk>/", "judges.views.judge_run_detail", name="judge-run-detail"),
    lazy_path("reports/<int:pk>/<str:name>", "judges.views.report_file", name="report-file"),
]
