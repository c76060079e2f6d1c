"""HTML routes of the chat app. Each area adds its routes in its own block."""

from django.urls import path

from chat.views import (  # Static runs and dialogue export
    backends,
    campaigns,
    datasets,
    dialogues,
    live,  # Live chat
    static_runs,
)

app_name = "chat"

urlpatterns = [
    # Datasets
    path("datasets/", datasets.dataset_list, name="dataset-list"),
    path("datasets/upload/", datasets.dataset_upload, name="dataset-upload"),
    path("datasets/<int:pk>/", datasets.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/export.jsonl", datasets.dataset_export, name="dataset-export"),
    # Backends
    path("backends/", backends.backend_list, name="backend-list"),
    path("backends/new/", backends.backend_create, name="backend-create"),
    path("backends/form-help/", backends.backend_form_help, name="backend-form-help"),
    path("backends/<int:pk>/", backends.backend_detail, name="backend-detail"),
    path("backends/<int:pk>/edit/", backends.backend_edit, name="backend-edit"),
    path("backends/<int:pk>/active/", backends.backend_set_active, name="backend-set-active"),
    path("backends/<int:pk>/test/", backends.backend_test, name="backend-test"),
    # Campaigns and invite links
    path("campaigns/", campaigns.campaign_list, name="campaign-list"),
    path("campaigns/new/", campaigns.campaign_create, name="campaign-create"),
    path("campaigns/<int:pk>/", campaigns.campaign_detail, name="campaign-detail"),
    path("campaigns/<int:pk>/edit/", campaigns.campaign_edit, name="campaign-edit"),
    path("campaigns/<int:pk>/activate/", campaigns.campaign_activate, name="campaign-activate"),
    path("campaigns/<int:pk>/close/", campaigns.campaign_close, name="campaign-close"),
    path("join/<str:token>/", campaigns.campaign_join, name="campaign-join"),
    # Live chat
    path("work/dialogues/<int:pk>/", live.dialogue_page, name="live-dialogue"),
    path("work/dialogues/<int:pk>/send/", live.dialogue_send, name="live-send"),
    path("work/dialogues/<int:pk>/stream/", live.dialogue_stream, name="live-stream"),
    path("work/dialogues/<int:pk>/retry/", live.dialogue_retry, name="live-retry"),
    path("work/dialogues/<int:pk>/grounding/", live.dialogue_grounding, name="live-grounding"),
    path("work/dialogues/<int:pk>/submit/", live.dialogue_submit, name="live-submit"),
    path("work/dialogues/<int:pk>/recollect/", live.dialogue_recollect, name="live-recollect"),
    path("work/dialogues/<int:pk>/abandon/", live.dialogue_abandon, name="live-abandon"),
    path("work/campaigns/<int:pk>/next/", live.campaign_next, name="live-next"),
    path("work/campaigns/<int:pk>/complete/", live.campaign_completion, name="live-completion"),
    # Static runs and dialogue export
    path("static-runs/", static_runs.static_run_list, name="static-run-list"),
    path("static-runs/new/", static_runs.static_run_create, name="static-run-create"),
    path("static-runs/<int:pk>/", static_runs.static_run_detail, name="static-run-detail"),
    path("static-runs/<int:pk>/cancel/", static_runs.static_run_cancel, name="static-run-cancel"),
    path("static-runs/<int:pk>/retry/", static_runs.static_run_retry, name="static-run-retry"),
    path(
        "static-runs/<int:pk>/dialogues.jsonl",
        static_runs.static_run_export,
        name="static-run-export",
    ),
    path(
        "campaigns/<int:pk>/dialogues.jsonl",
        dialogues.campaign_dialogues_export,
        name="campaign-dialogues-export",
    ),
    path("dialogues/import/", dialogues.dialogue_import, name="dialogue-import"),
]
