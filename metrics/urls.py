"""HTML routes of the metrics app. Each area adds its routes in its own block."""

from core.lazy_urls import lazy_path

app_name = "metrics"

urlpatterns = [
    # Metric runs
    lazy_path("runs/", "metrics.views.metric_runs.run_list", name="metric-run-list"),
    lazy_path("runs/new/", "metrics.views.metric_runs.run_create", name="metric-run-create"),
    lazy_path(
        "runs/preflight/", "metrics.views.metric_runs.run_preflight", name="metric-run-preflight"
    ),
    lazy_path("runs/<int:pk>/", "metrics.views.metric_runs.run_detail", name="metric-run-detail"),
    lazy_path(
        "runs/<int:pk>/cancel/", "metrics.views.metric_runs.run_cancel", name="metric-run-cancel"
    ),
    lazy_path(
        "runs/<int:pk>/resume/", "metrics.views.metric_runs.run_resume", name="metric-run-resume"
    ),
    lazy_path(
        "runs/<int:pk>/turns/", "metrics.views.metric_runs.run_turns", name="metric-run-turns"
    ),
    lazy_path(
        "runs/<int:pk>/dialogues/",
        "metrics.views.metric_runs.run_dialogues",
        name="metric-run-dialogues",
    ),
    lazy_path(
        "runs/<int:pk>/scores-<str:level>.<str:fmt>",
        "metrics.views.metric_runs.run_download",
        name="metric-run-download",
    ),
    # Reports
    lazy_path("reports/", "metrics.views.reports.report_list", name="report-list"),
    lazy_path("reports/new/", "metrics.views.reports.report_create", name="report-create"),
    lazy_path("reports/import-scores/", "metrics.views.reports.score_import", name="score-import"),
    lazy_path("reports/<int:pk>/", "metrics.views.reports.report_detail", name="report-detail"),
    lazy_path("reports/<int:pk>/rerun/", "metrics.views.reports.report_rerun", name="report-rerun"),
    lazy_path(
        "reports/<int:pk>/cancel/", "metrics.views.reports.report_cancel", name="report-cancel"
    ),
    lazy_path(
        "reports/<int:pk>/download/<str:fmt>/",
        "metrics.views.reports.report_download",
        name="report-download",
    ),
    lazy_path(
        "reports/<int:pk>/figures/<str:name>",
        "metrics.views.reports.report_figure",
        name="report-figure",
    ),
    lazy_path(
        "reports/<int:pk>/pairwise/<str:name>",
        "metrics.views.reports.report_pairwise_file",
        name="report-pairwise-file",
    ),
    lazy_path(
        "reports/<int:pk>/ppi/<str:name>",
        "metrics.views.reports.report_ppi_file",
        name="report-ppi-file",
    ),
    # A rating job's human + judge page (issue 28)
    lazy_path("jobs/<int:pk>/ppi/", "metrics.views.ppi.job_ppi", name="job-ppi"),
    lazy_path(
        "jobs/<int:pk>/ppi/stopping-rule/",
        "metrics.views.ppi.job_stopping_rule",
        name="job-ppi-stopping-rule",
    ),
    lazy_path(
        "jobs/<int:pk>/ppi/rounds/", "metrics.views.ppi.job_round_draw", name="job-ppi-round"
    ),
    lazy_path(
        "studies/<int:pk>/pairwise/", "metrics.views.pairwise.study_ranking", name="study-ranking"
    ),
    # Learned metrics (discriminator training)
    lazy_path(
        "discriminators/",
        "metrics.views.discriminators.discriminator_list",
        name="discriminator-list",
    ),
    lazy_path(
        "discriminators/new/",
        "metrics.views.discriminators.discriminator_create",
        name="discriminator-create",
    ),
    lazy_path(
        "discriminators/<int:pk>/",
        "metrics.views.discriminators.discriminator_detail",
        name="discriminator-detail",
    ),
    lazy_path(
        "discriminators/<int:pk>/retry/",
        "metrics.views.discriminators.discriminator_retry",
        name="discriminator-retry",
    ),
    lazy_path(
        "discriminators/<int:pk>/cancel/",
        "metrics.views.discriminators.discriminator_cancel",
        name="discriminator-cancel",
    ),
    lazy_path(
        "followup-selections/", "metrics.views.followup.selection_list", name="followup-list"
    ),
    lazy_path(
        "followup-selections/new/",
        "metrics.views.followup.selection_create",
        name="followup-create",
    ),
    lazy_path(
        "followup-selections/<int:pk>/",
        "metrics.views.followup.selection_detail",
        name="followup-detail",
    ),
    lazy_path(
        "followup-selections/<int:pk>/cancel/",
        "metrics.views.followup.selection_cancel",
        name="followup-cancel",
    ),
    lazy_path(
        "followup-selections/<int:pk>/retry/",
        "metrics.views.followup.selection_retry",
        name="followup-retry",
    ),
]
