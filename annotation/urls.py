"""HTML routes of the annotation app. Each area adds its routes in its own block."""

from core.lazy_urls import lazy_path

app_name = "annotation"

urlpatterns = [
    # Rubrics
    lazy_path("rubrics/", "annotation.views.rubrics.rubric_list", name="rubric-list"),
    lazy_path("rubrics/new/", "annotation.views.rubrics.rubric_create", name="rubric-create"),
    lazy_path(
        "rubrics/question-row/",
        "annotation.views.rubrics.rubric_question_row",
        name="rubric-question-row",
    ),
    lazy_path("rubrics/<int:pk>/", "annotation.views.rubrics.rubric_detail", name="rubric-detail"),
    lazy_path("rubrics/<int:pk>/edit/", "annotation.views.rubrics.rubric_edit", name="rubric-edit"),
    # Review
    lazy_path("review/", "annotation.views.review.review_queue", name="review-queue"),
    lazy_path("review/next/", "annotation.views.review.review_next", name="review-next"),
    lazy_path(
        "review/<int:dialogue_id>/",
        "annotation.views.review.review_dialogue",
        name="review-dialogue",
    ),
    lazy_path(
        "campaigns/<int:campaign_id>/review-policy/",
        "annotation.views.policy.review_policy",
        name="review-policy",
    ),
    # Rating jobs, assignments, the annotation page, live per-turn rating in the chat
    lazy_path("jobs/", "annotation.views.jobs.job_list", name="job-list"),
    lazy_path("jobs/new/", "annotation.views.jobs.job_create", name="job-create"),
    lazy_path("jobs/<int:pk>/", "annotation.views.jobs.job_detail", name="job-detail"),
    lazy_path(
        "jobs/<int:pk>/open/",
        "annotation.views.jobs.job_status",
        {"action": "open"},
        name="job-open",
    ),
    lazy_path(
        "jobs/<int:pk>/close/",
        "annotation.views.jobs.job_status",
        {"action": "close"},
        name="job-close",
    ),
    lazy_path("jobs/<int:pk>/quality/", "annotation.views.jobs.job_quality", name="job-quality"),
    lazy_path("jobs/<int:pk>/gold/", "annotation.views.jobs.job_gold", name="job-gold"),
    lazy_path(
        "jobs/<int:pk>/gold/answers/",
        "annotation.views.jobs.job_gold_answers",
        name="job-gold-answers",
    ),
    lazy_path(
        "jobs/<int:pk>/gold/<int:item_id>/delete/",
        "annotation.views.jobs.job_gold_delete",
        name="job-gold-delete",
    ),
    lazy_path(
        "jobs/<int:pk>/raters/<int:rater_id>/block/",
        "annotation.views.jobs.job_rater",
        {"action": "block"},
        name="job-rater-block",
    ),
    lazy_path(
        "jobs/<int:pk>/raters/<int:rater_id>/unblock/",
        "annotation.views.jobs.job_rater",
        {"action": "unblock"},
        name="job-rater-unblock",
    ),
    lazy_path(
        "jobs/<int:pk>/gold-pair/", "annotation.views.jobs.job_gold_pair", name="job-gold-pair"
    ),
    lazy_path(
        "jobs/<int:pk>/raters/<int:rater_id>/votes/include/",
        "annotation.views.jobs.job_rater_votes",
        {"action": "include"},
        name="job-rater-votes-include",
    ),
    lazy_path(
        "jobs/<int:pk>/raters/<int:rater_id>/votes/exclude/",
        "annotation.views.jobs.job_rater_votes",
        {"action": "exclude"},
        name="job-rater-votes-exclude",
    ),
    lazy_path(
        "rate/<int:job_id>/next/", "annotation.views.annotate.annotate_next", name="annotate-next"
    ),
    lazy_path(
        "rate/item/<int:pk>/", "annotation.views.annotate.annotate_item", name="annotate-item"
    ),
    lazy_path(
        "rate/item/<int:pk>/answer/",
        "annotation.views.annotate.annotate_answer",
        name="annotate-answer",
    ),
    lazy_path(
        "rate/item/<int:pk>/submit/",
        "annotation.views.annotate.annotate_submit",
        name="annotate-submit",
    ),
    lazy_path(
        "live/turn/<int:turn_id>/",
        "annotation.views.live.live_turn_rating",
        name="live-turn-rating",
    ),
    lazy_path(
        "live/dialogue/<int:dialogue_id>/guide/",
        "annotation.views.live.live_guide",
        name="live-guide",
    ),
    # Agreement, human scores, exports, imports
    lazy_path("jobs/<int:pk>/results/", "annotation.views.results.job_results", name="job-results"),
    lazy_path(
        "campaigns/<int:campaign_id>/rater-shortfalls/",
        "annotation.views.results.campaign_rater_shortfalls",
        name="campaign-rater-shortfalls",
    ),
    lazy_path(
        "jobs/<int:pk>/export/<slug:what>.<slug:fmt>",
        "annotation.views.results.job_export",
        name="job-export",
    ),
    lazy_path(
        "ratings/import/", "annotation.views.results.ratings_import_page", name="ratings-import"
    ),
    lazy_path(
        "ratings/imports/<int:pk>/",
        "annotation.views.results.rating_import_detail",
        name="rating-import",
    ),
    lazy_path(
        "ratings/imports/<int:pk>/cancel/",
        "annotation.views.results.rating_import_cancel_view",
        name="rating-import-cancel",
    ),
]
