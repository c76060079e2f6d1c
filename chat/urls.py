"""HTML routes of the chat app. Each area adds its routes in its own block."""

from core.lazy_urls import lazy_path

app_name = "chat"

urlpatterns = [
    # Datasets
    lazy_path("datasets/", "chat.views.datasets.dataset_list", name="dataset-list"),
    lazy_path("datasets/upload/", "chat.views.datasets.dataset_upload", name="dataset-upload"),
    lazy_path("datasets/<int:pk>/", "chat.views.datasets.dataset_detail", name="dataset-detail"),
    lazy_path(
        "datasets/<int:pk>/export.jsonl",
        "chat.views.datasets.dataset_export",
        name="dataset-export",
    ),
    # Backends
    lazy_path("backends/", "chat.views.backends.backend_list", name="backend-list"),
    lazy_path("backends/new/", "chat.views.backends.backend_create", name="backend-create"),
    lazy_path(
        "backends/form-help/", "chat.views.backends.backend_form_help", name="backend-form-help"
    ),
    lazy_path("backends/<int:pk>/", "chat.views.backends.backend_detail", name="backend-detail"),
    lazy_path("backends/<int:pk>/edit/", "chat.views.backends.backend_edit", name="backend-edit"),
    lazy_path(
        "backends/<int:pk>/active/",
        "chat.views.backends.backend_set_active",
        name="backend-set-active",
    ),
    lazy_path("backends/<int:pk>/test/", "chat.views.backends.backend_test", name="backend-test"),
    # Campaigns and invite links
    lazy_path("campaigns/", "chat.views.campaigns.campaign_list", name="campaign-list"),
    lazy_path("campaigns/new/", "chat.views.campaigns.campaign_create", name="campaign-create"),
    lazy_path(
        "campaigns/<int:pk>/", "chat.views.campaigns.campaign_detail", name="campaign-detail"
    ),
    lazy_path(
        "campaigns/<int:pk>/edit/", "chat.views.campaigns.campaign_edit", name="campaign-edit"
    ),
    lazy_path(
        "campaigns/<int:pk>/activate/",
        "chat.views.campaigns.campaign_activate",
        name="campaign-activate",
    ),
    lazy_path(
        "campaigns/<int:pk>/close/", "chat.views.campaigns.campaign_close", name="campaign-close"
    ),
    lazy_path("join/<str:token>/", "chat.views.campaigns.campaign_join", name="campaign-join"),
    # Live chat
    lazy_path(
        "work/dialogues/<int:pk>/",
        "chat.views.live.dialogue_page",
        name="live-dialogue",
        is_async=True,
    ),
    lazy_path(
        "work/dialogues/<int:pk>/send/",
        "chat.views.live.dialogue_send",
        name="live-send",
        is_async=True,
    ),
    lazy_path(
        "work/dialogues/<int:pk>/stream/",
        "chat.views.live.dialogue_stream",
        name="live-stream",
        is_async=True,
    ),
    lazy_path(
        "work/dialogues/<int:pk>/retry/",
        "chat.views.live.dialogue_retry",
        name="live-retry",
        is_async=True,
    ),
    lazy_path(
        "work/dialogues/<int:pk>/grounding/",
        "chat.views.live.dialogue_grounding",
        name="live-grounding",
        is_async=True,
    ),
    lazy_path(
        "work/dialogues/<int:pk>/submit/",
        "chat.views.live.dialogue_submit",
        name="live-submit",
        is_async=True,
    ),
    lazy_path(
        "work/dialogues/<int:pk>/recollect/",
        "chat.views.live.dialogue_recollect",
        name="live-recollect",
    ),
    lazy_path(
        "work/dialogues/<int:pk>/abandon/", "chat.views.live.dialogue_abandon", name="live-abandon"
    ),
    lazy_path("work/campaigns/<int:pk>/next/", "chat.views.live.campaign_next", name="live-next"),
    lazy_path(
        "work/campaigns/<int:pk>/complete/",
        "chat.views.live.campaign_completion",
        name="live-completion",
    ),
    # Static runs and dialogue export
    lazy_path("static-runs/", "chat.views.static_runs.static_run_list", name="static-run-list"),
    lazy_path(
        "static-runs/new/", "chat.views.static_runs.static_run_create", name="static-run-create"
    ),
    lazy_path(
        "static-runs/<int:pk>/",
        "chat.views.static_runs.static_run_detail",
        name="static-run-detail",
    ),
    lazy_path(
        "static-runs/<int:pk>/cancel/",
        "chat.views.static_runs.static_run_cancel",
        name="static-run-cancel",
    ),
    lazy_path(
        "static-runs/<int:pk>/retry/",
        "chat.views.static_runs.static_run_retry",
        name="static-run-retry",
    ),
    lazy_path(
        "static-runs/<int:pk>/dialogues.jsonl",
        "chat.views.static_runs.static_run_export",
        name="static-run-export",
    ),
    lazy_path(
        "campaigns/<int:pk>/dialogues.jsonl",
        "chat.views.dialogues.campaign_dialogues_export",
        name="campaign-dialogues-export",
    ),
    lazy_path("dialogues/import/", "chat.views.dialogues.dialogue_import", name="dialogue-import"),
    # Pairwise votes of a study
    lazy_path(
        "campaigns/<int:pk>/votes/import/",
        "chat.views.votes.campaign_votes_import",
        name="campaign-votes-import",
    ),
    lazy_path(
        "campaigns/<int:pk>/votes/export/",
        "chat.views.votes.campaign_votes_export",
        name="campaign-votes-export",
    ),
    lazy_path(
        "campaigns/<int:pk>/votes/leaks/",
        "chat.views.votes.campaign_vote_leaks",
        name="campaign-vote-leaks",
    ),
    lazy_path(
        "campaigns/<int:pk>/votes/identity-words/",
        "chat.views.votes.campaign_identity_words",
        name="campaign-identity-words",
    ),
]
