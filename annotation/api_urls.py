"""API routes of the annotation app (under /api/). Each area adds its routes in its own block."""

from django.urls import path

from annotation.api import rating as rating_api
from annotation.api import results as results_api
from annotation.api import review as review_api
from annotation.api import rubrics as rubrics_api

urlpatterns = [
    # Rubrics
    path("rubrics/", rubrics_api.RubricListCreateApi.as_view(), name="api-rubric-list"),
    path("rubrics/<int:pk>/", rubrics_api.RubricDetailApi.as_view(), name="api-rubric-detail"),
    path(
        "rubrics/<int:pk>/versions/",
        rubrics_api.RubricNewVersionApi.as_view(),
        name="api-rubric-new-version",
    ),
    # Review
    path("review/queue/", review_api.ReviewQueueApi.as_view(), name="api-review-queue"),
    path(
        "review/dialogues/<int:pk>/decision/",
        review_api.ReviewDecisionApi.as_view(),
        name="api-review-decision",
    ),
    path(
        "review/policies/<int:campaign_id>/",
        review_api.ReviewPolicyApi.as_view(),
        name="api-review-policy",
    ),
    # Rating jobs, assignments, ratings
    path("rating-jobs/", rating_api.JobListCreateApi.as_view(), name="api-job-list"),
    path("rating-jobs/<int:pk>/", rating_api.JobDetailApi.as_view(), name="api-job-detail"),
    path(
        "rating-jobs/<int:pk>/open/",
        rating_api.JobStatusApi.as_view(action="open"),
        name="api-job-open",
    ),
    path(
        "rating-jobs/<int:pk>/close/",
        rating_api.JobStatusApi.as_view(action="close"),
        name="api-job-close",
    ),
    path(
        "rating-jobs/<int:pk>/progress/",
        rating_api.JobProgressApi.as_view(),
        name="api-job-progress",
    ),
    path("rating-jobs/<int:pk>/flags/", rating_api.JobFlagsApi.as_view(), name="api-job-flags"),
    path(
        "rating-jobs/<int:pk>/gold-items/",
        rating_api.GoldItemApi.as_view(),
        name="api-job-gold-items",
    ),
    path(
        "rating-jobs/<int:pk>/raters/<int:rater_id>/block/",
        rating_api.RaterBlockApi.as_view(),
        name="api-job-rater-block",
    ),
    path("assignments/", rating_api.MyAssignmentsApi.as_view(), name="api-my-assignments"),
    path(
        "assignments/<int:pk>/ratings/",
        rating_api.RatingSaveApi.as_view(),
        name="api-rating-save",
    ),
    path(
        "assignments/<int:pk>/submit/",
        rating_api.AssignmentSubmitApi.as_view(),
        name="api-assignment-submit",
    ),
    # Agreement, human scores, exports, imports
    path(
        "rating-jobs/<int:pk>/results/",
        results_api.JobResultsApi.as_view(),
        name="api-job-results",
    ),
    path(
        "rating-jobs/<int:pk>/human-scores/",
        results_api.HumanScoresApi.as_view(),
        name="api-job-human-scores",
    ),
    path(
        "rating-jobs/<int:pk>/export/",
        results_api.JobExportApi.as_view(),
        name="api-job-export",
    ),
    path("ratings/import/", results_api.RatingImportApi.as_view(), name="api-ratings-import"),
    path(
        "ratings/imports/<int:pk>/",
        results_api.RatingImportDetailApi.as_view(),
        name="api-rating-import",
    ),
    path(
        "ratings/imports/<int:pk>/cancel/",
        results_api.RatingImportCancelApi.as_view(),
        name="api-rating-import-cancel",
    ),
]
