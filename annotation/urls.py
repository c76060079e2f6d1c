"""HTML routes of the annotation app. Each area adds its routes in its own block."""

from django.urls import path

from annotation.views import annotate, jobs, live, policy, review
from annotation.views import results as results_views
from annotation.views import rubrics as rubric_views

app_name = "annotation"

urlpatterns = [
    # Rubrics
    path("rubrics/", rubric_views.rubric_list, name="rubric-list"),
    path("rubrics/new/", rubric_views.rubric_create, name="rubric-create"),
    path("rubrics/question-row/", rubric_views.rubric_question_row, name="rubric-question-row"),
    path("rubrics/<int:pk>/", rubric_views.rubric_detail, name="rubric-detail"),
    path("rubrics/<int:pk>/edit/", rubric_views.rubric_edit, name="rubric-edit"),
    # Review
    path("review/", review.review_queue, name="review-queue"),
    path("review/next/", review.review_next, name="review-next"),
    path("review/<int:dialogue_id>/", review.review_dialogue, name="review-dialogue"),
    path(
        "campaigns/<int:campaign_id>/review-policy/",
        policy.review_policy,
        name="review-policy",
    ),
    # Rating jobs, assignments, the annotation page, live per-turn rating in the chat
    path("jobs/", jobs.job_list, name="job-list"),
    path("jobs/new/", jobs.job_create, name="job-create"),
    path("jobs/<int:pk>/", jobs.job_detail, name="job-detail"),
    path("jobs/<int:pk>/open/", jobs.job_status, {"action": "open"}, name="job-open"),
    path("jobs/<int:pk>/close/", jobs.job_status, {"action": "close"}, name="job-close"),
    path("jobs/<int:pk>/quality/", jobs.job_quality, name="job-quality"),
    path("jobs/<int:pk>/gold/", jobs.job_gold, name="job-gold"),
    path("jobs/<int:pk>/gold/answers/", jobs.job_gold_answers, name="job-gold-answers"),
    path("jobs/<int:pk>/gold/<int:item_id>/delete/", jobs.job_gold_delete, name="job-gold-delete"),
    path(
        "jobs/<int:pk>/raters/<int:rater_id>/block/",
        jobs.job_rater,
        {"action": "block"},
        name="job-rater-block",
    ),
    path(
        "jobs/<int:pk>/raters/<int:rater_id>/unblock/",
        jobs.job_rater,
        {"action": "unblock"},
        name="job-rater-unblock",
    ),
    path("rate/<int:job_id>/next/", annotate.annotate_next, name="annotate-next"),
    path("rate/item/<int:pk>/", annotate.annotate_item, name="annotate-item"),
    path("rate/item/<int:pk>/answer/", annotate.annotate_answer, name="annotate-answer"),
    path("rate/item/<int:pk>/submit/", annotate.annotate_submit, name="annotate-submit"),
    path("live/turn/<int:turn_id>/", live.live_turn_rating, name="live-turn-rating"),
    path("live/dialogue/<int:dialogue_id>/guide/", live.live_guide, name="live-guide"),
    # Agreement, human scores, exports, imports
    path("jobs/<int:pk>/results/", results_views.job_results, name="job-results"),
    path(
        "campaigns/<int:campaign_id>/rater-shortfalls/",
        results_views.campaign_rater_shortfalls,
        name="campaign-rater-shortfalls",
    ),
    path(
        "jobs/<int:pk>/export/<slug:what>.<slug:fmt>",
        results_views.job_export,
        name="job-export",
    ),
    path("ratings/import/", results_views.ratings_import_page, name="ratings-import"),
    path("ratings/imports/<int:pk>/", results_views.rating_import_detail, name="rating-import"),
    path(
        "ratings/imports/<int:pk>/cancel/",
        results_views.rating_import_cancel_view,
        name="rating-import-cancel",
    ),
]
