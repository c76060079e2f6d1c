"""API routes of the annotation app (under /api/). Each area adds its routes in its own block."""

from core.lazy_urls import lazy_path

urlpatterns = [
    # Rubrics
    lazy_path("rubrics/", "annotation.api.rubrics.RubricListCreateApi", name="api-rubric-list"),
    lazy_path(
        "rubrics/<int:pk>/", "annotation.api.rubrics.RubricDetailApi", name="api-rubric-detail"
    ),
    lazy_path(
        "rubrics/<int:pk>/versions/",
        "annotation.api.rubrics.RubricNewVersionApi",
        name="api-rubric-new-version",
    ),
    # Review
    lazy_path("review/queue/", "annotation.api.review.ReviewQueueApi", name="api-review-queue"),
    lazy_path(
        "review/dialogues/<int:pk>/decision/",
        "annotation.api.review.ReviewDecisionApi",
        name="api-review-decision",
    ),
    lazy_path(
        "review/policies/<int:campaign_id>/",
        "annotation.api.review.ReviewPolicyApi",
        name="api-review-policy",
    ),
    # Rating jobs, assignments, ratings
    lazy_path("rating-jobs/", "annotation.api.rating.JobListCreateApi", name="api-job-list"),
    lazy_path("rating-jobs/<int:pk>/", "annotation.api.rating.JobDetailApi", name="api-job-detail"),
    lazy_path(
        "rating-jobs/<int:pk>/votes/", "annotation.api.rating.JobVotesApi", name="api-job-votes"
    ),
    lazy_path(
        "rating-jobs/<int:pk>/open/",
        "annotation.api.rating.JobStatusApi",
        name="api-job-open",
        action="open",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/close/",
        "annotation.api.rating.JobStatusApi",
        name="api-job-close",
        action="close",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/progress/",
        "annotation.api.rating.JobProgressApi",
        name="api-job-progress",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/flags/", "annotation.api.rating.JobFlagsApi", name="api-job-flags"
    ),
    lazy_path(
        "rating-jobs/<int:pk>/gold-items/",
        "annotation.api.rating.GoldItemApi",
        name="api-job-gold-items",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/raters/<int:rater_id>/block/",
        "annotation.api.rating.RaterBlockApi",
        name="api-job-rater-block",
    ),
    lazy_path("assignments/", "annotation.api.rating.MyAssignmentsApi", name="api-my-assignments"),
    lazy_path(
        "assignments/<int:pk>/ratings/",
        "annotation.api.rating.RatingSaveApi",
        name="api-rating-save",
    ),
    lazy_path(
        "assignments/<int:pk>/submit/",
        "annotation.api.rating.AssignmentSubmitApi",
        name="api-assignment-submit",
    ),
    # Agreement, human scores, exports, imports
    lazy_path(
        "rating-jobs/<int:pk>/results/",
        "annotation.api.results.JobResultsApi",
        name="api-job-results",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/human-scores/",
        "annotation.api.results.HumanScoresApi",
        name="api-job-human-scores",
    ),
    lazy_path(
        "rating-jobs/<int:pk>/export/",
        "annotation.api.results.JobExportApi",
        name="api-job-export",
    ),
    lazy_path(
        "ratings/import/", "annotation.api.results.RatingImportApi", name="api-ratings-import"
    ),
    lazy_path(
        "ratings/imports/<int:pk>/",
        "annotation.api.results.RatingImportDetailApi",
        name="api-rating-import",
    ),
    lazy_path(
        "ratings/imports/<int:pk>/cancel/",
        "annotation.api.results.RatingImportCancelApi",
        name="api-rating-import-cancel",
    ),
]
