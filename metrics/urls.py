"""HTML routes of the metrics app. Each area adds its routes in its own block."""

from django.urls import path

from metrics.views import discriminators, followup, metric_runs
from metrics.views import reports as report_views

app_name = "metrics"

urlpatterns = [
    # Metric runs
    path("runs/", metric_runs.run_list, name="metric-run-list"),
    path("runs/new/", metric_runs.run_create, name="metric-run-create"),
    path("runs/preflight/", metric_runs.run_preflight, name="metric-run-preflight"),
    path("runs/<int:pk>/", metric_runs.run_detail, name="metric-run-detail"),
    path("runs/<int:pk>/cancel/", metric_runs.run_cancel, name="metric-run-cancel"),
    path("runs/<int:pk>/resume/", metric_runs.run_resume, name="metric-run-resume"),
    path("runs/<int:pk>/turns/", metric_runs.run_turns, name="metric-run-turns"),
    path("runs/<int:pk>/dialogues/", metric_runs.run_dialogues, name="metric-run-dialogues"),
    path(
        "runs/<int:pk>/scores-<str:level>.<str:fmt>",
        metric_runs.run_download,
        name="metric-run-download",
    ),
    # Reports
    path("reports/", report_views.report_list, name="report-list"),
    path("reports/new/", report_views.report_create, name="report-create"),
    path("reports/import-scores/", report_views.score_import, name="score-import"),
    path("reports/<int:pk>/", report_views.report_detail, name="report-detail"),
    path("reports/<int:pk>/rerun/", report_views.report_rerun, name="report-rerun"),
    path("reports/<int:pk>/cancel/", report_views.report_cancel, name="report-cancel"),
    path(
        "reports/<int:pk>/download/<str:fmt>/",
        report_views.report_download,
        name="report-download",
    ),
    path(
        "reports/<int:pk>/figures/<str:name>",
        report_views.report_figure,
        name="report-figure",
    ),
    # Learned metrics (discriminator training)
    path("discriminators/", discriminators.discriminator_list, name="discriminator-list"),
    path("discriminators/new/", discriminators.discriminator_create, name="discriminator-create"),
    path(
        "discriminators/<int:pk>/",
        discriminators.discriminator_detail,
        name="discriminator-detail",
    ),
    path(
        "discriminators/<int:pk>/retry/",
        discriminators.discriminator_retry,
        name="discriminator-retry",
    ),
    path(
        "discriminators/<int:pk>/cancel/",
        discriminators.discriminator_cancel,
        name="discriminator-cancel",
    ),
    path("followup-selections/", followup.selection_list, name="followup-list"),
    path("followup-selections/new/", followup.selection_create, name="followup-create"),
    path("followup-selections/<int:pk>/", followup.selection_detail, name="followup-detail"),
    path("followup-selections/<int:pk>/cancel/", followup.selection_cancel, name="followup-cancel"),
    path("followup-selections/<int:pk>/retry/", followup.selection_retry, name="followup-retry"),
]
