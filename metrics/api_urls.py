"""API routes of the metrics app (under /api/). Each area adds its routes in its own block."""

from core.lazy_urls import lazy_path

urlpatterns = [
    # Metric runs
    lazy_path(
        "metric-runs/", "metrics.api.metric_runs.MetricRunListApi", name="api-metric-run-list"
    ),
    lazy_path(
        "metric-runs/preflight/",
        "metrics.api.metric_runs.MetricRunPreflightApi",
        name="api-metric-run-preflight",
    ),
    lazy_path(
        "metric-runs/<int:pk>/",
        "metrics.api.metric_runs.MetricRunDetailApi",
        name="api-metric-run-detail",
    ),
    lazy_path(
        "metric-runs/<int:pk>/cancel/",
        "metrics.api.metric_runs.MetricRunCancelApi",
        name="api-metric-run-cancel",
    ),
    lazy_path(
        "metric-runs/<int:pk>/resume/",
        "metrics.api.metric_runs.MetricRunResumeApi",
        name="api-metric-run-resume",
    ),
    lazy_path(
        "metric-runs/<int:pk>/scores/",
        "metrics.api.metric_runs.MetricScoreListApi",
        name="api-metric-run-scores",
    ),
    lazy_path(
        "metric-runs/<int:pk>/scores-<str:level>.<str:fmt>",
        "metrics.api.metric_runs.MetricRunDownloadApi",
        name="api-metric-run-download",
    ),
    # A rating job's prediction-powered estimates, planning and rounds (issue 28)
    lazy_path(
        "rating-jobs/<int:pk>/ppi/estimates/",
        "metrics.api.ppi.RatingJobEstimatesApi",
        name="api-rating-job-ppi-estimates",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/ppi/plan/",
        "metrics.api.ppi.RatingJobPlanApi",
        name="api-rating-job-ppi-plan",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/ppi/pairwise/",
        "metrics.api.ppi.RatingJobPairwisePPIApi",
        name="api-rating-job-ppi-pairwise",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/stopping-rule/",
        "metrics.api.ppi.RatingJobStoppingRuleApi",
        name="api-rating-job-stopping-rule",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/rounds/",
        "metrics.api.ppi.RatingJobRoundsApi",
        name="api-rating-job-rounds",
    ),
    # Pairwise rankings
    lazy_path(
        "pairwise/ranking/", "metrics.api.pairwise.PairwiseRankingApi", name="api-pairwise-ranking"
    ),
    # Reports
    lazy_path("reports/", "metrics.api.reports.ReportListCreateApi", name="api-report-list"),
    lazy_path("reports/<int:pk>/", "metrics.api.reports.ReportDetailApi", name="api-report-detail"),
    lazy_path(
        "reports/<int:pk>/rerun/", "metrics.api.reports.ReportRerunApi", name="api-report-rerun"
    ),
    lazy_path(
        "reports/<int:pk>/cancel/", "metrics.api.reports.ReportCancelApi", name="api-report-cancel"
    ),
    lazy_path(
        "reports/<int:pk>/download/<str:fmt>/",
        "metrics.api.reports.ReportDownloadApi",
        name="api-report-download",
    ),
    lazy_path(
        "reports/<int:pk>/figures/<str:name>",
        "metrics.api.reports.ReportFigureApi",
        name="api-report-figure",
    ),
    lazy_path(
        "reports/<int:pk>/pairwise/<str:name>",
        "metrics.api.reports.ReportPairwiseFileApi",
        name="api-report-pairwise-file",
    ),
    lazy_path(
        "metric-runs/import/",
        "metrics.api.reports.MetricScoreImportApi",
        name="api-metric-run-import",
    ),
    # Learned metrics (discriminator training)
    lazy_path(
        "discriminators/",
        "metrics.api.discriminators.DiscriminatorListApi",
        name="api-discriminator-list",
    ),
    lazy_path(
        "discriminators/<int:pk>/",
        "metrics.api.discriminators.DiscriminatorDetailApi",
        name="api-discriminator-detail",
    ),
    # FED item selections (seed 004)
    lazy_path(
        "followup-selections/",
        "metrics.api.followup.FollowupSelectionListApi",
        name="api-followup-selection-list",
    ),
    lazy_path(
        "followup-selections/<int:pk>/",
        "metrics.api.followup.FollowupSelectionDetailApi",
        name="api-followup-selection-detail",
    ),
]
