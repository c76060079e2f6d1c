"""API routes of the metrics app (under /api/). Each area adds its routes in its own block."""

from django.urls import path

from metrics.api import discriminators, followup, metric_runs
from metrics.api import reports as report_api

urlpatterns = [
    # Metric runs
    path("metric-runs/", metric_runs.MetricRunListApi.as_view(), name="api-metric-run-list"),
    path(
        "metric-runs/preflight/",
        metric_runs.MetricRunPreflightApi.as_view(),
        name="api-metric-run-preflight",
    ),
    path(
        "metric-runs/<int:pk>/",
        metric_runs.MetricRunDetailApi.as_view(),
        name="api-metric-run-detail",
    ),
    path(
        "metric-runs/<int:pk>/cancel/",
        metric_runs.MetricRunCancelApi.as_view(),
        name="api-metric-run-cancel",
    ),
    path(
        "metric-runs/<int:pk>/resume/",
        metric_runs.MetricRunResumeApi.as_view(),
        name="api-metric-run-resume",
    ),
    path(
        "metric-runs/<int:pk>/scores/",
        metric_runs.MetricScoreListApi.as_view(),
        name="api-metric-run-scores",
    ),
    path(
        "metric-runs/<int:pk>/scores-<str:level>.<str:fmt>",
        metric_runs.MetricRunDownloadApi.as_view(),
        name="api-metric-run-download",
    ),
    # Reports
    path("reports/", report_api.ReportListCreateApi.as_view(), name="api-report-list"),
    path("reports/<int:pk>/", report_api.ReportDetailApi.as_view(), name="api-report-detail"),
    path("reports/<int:pk>/rerun/", report_api.ReportRerunApi.as_view(), name="api-report-rerun"),
    path(
        "reports/<int:pk>/cancel/", report_api.ReportCancelApi.as_view(), name="api-report-cancel"
    ),
    path(
        "reports/<int:pk>/download/<str:fmt>/",
        report_api.ReportDownloadApi.as_view(),
        name="api-report-download",
    ),
    path(
        "reports/<int:pk>/figures/<str:name>",
        report_api.ReportFigureApi.as_view(),
        name="api-report-figure",
    ),
    path(
        "metric-runs/import/",
        report_api.MetricScoreImportApi.as_view(),
        name="api-metric-run-import",
    ),
    # Learned metrics (discriminator training)
    path(
        "discriminators/",
        discriminators.DiscriminatorListApi.as_view(),
        name="api-discriminator-list",
    ),
    path(
        "discriminators/<int:pk>/",
        discriminators.DiscriminatorDetailApi.as_view(),
        name="api-discriminator-detail",
    ),
    # FED item selections (seed 004)
    path(
        "followup-selections/",
        followup.FollowupSelectionListApi.as_view(),
        name="api-followup-selection-list",
    ),
    path(
        "followup-selections/<int:pk>/",
        followup.FollowupSelectionDetailApi.as_view(),
        name="api-followup-selection-detail",
    ),
]
