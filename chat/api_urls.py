"""API routes of the chat app (under /api/). Each area adds its routes in its own block."""

from core.lazy_urls import lazy_path

urlpatterns = [
    # Datasets
    lazy_path("datasets/", "chat.api.datasets.DatasetListApi", name="api-dataset-list"),
    lazy_path("datasets/import/", "chat.api.datasets.DatasetImportApi", name="api-dataset-import"),
    lazy_path(
        "datasets/<int:pk>/", "chat.api.datasets.DatasetDetailApi", name="api-dataset-detail"
    ),
    lazy_path(
        "datasets/<int:pk>/samples/", "chat.api.datasets.SampleListApi", name="api-sample-list"
    ),
    lazy_path(
        "datasets/<int:pk>/export.jsonl",
        "chat.api.datasets.DatasetExportApi",
        name="api-dataset-export",
    ),
    # Backends
    lazy_path("backends/", "chat.api.backends.BackendListCreateApi", name="api-backend-list"),
    lazy_path(
        "backends/<int:pk>/", "chat.api.backends.BackendDetailApi", name="api-backend-detail"
    ),
    lazy_path(
        "backends/<int:pk>/deactivate/",
        "chat.api.backends.BackendDeactivateApi",
        name="api-backend-deactivate",
    ),
    lazy_path(
        "backends/<int:pk>/test/", "chat.api.backends.BackendTestApi", name="api-backend-test"
    ),
    # Campaigns
    lazy_path("campaigns/", "chat.api.campaigns.CampaignListApi", name="api-campaign-list"),
    lazy_path(
        "campaigns/<int:pk>/", "chat.api.campaigns.CampaignDetailApi", name="api-campaign-detail"
    ),
    lazy_path(
        "campaigns/<int:pk>/activate/",
        "chat.api.campaigns.CampaignActivateApi",
        name="api-campaign-activate",
    ),
    lazy_path(
        "campaigns/<int:pk>/close/",
        "chat.api.campaigns.CampaignCloseApi",
        name="api-campaign-close",
    ),
    lazy_path(
        "campaigns/<int:pk>/progress/",
        "chat.api.campaigns.CampaignProgressApi",
        name="api-campaign-progress",
    ),
    # Live chat
    # Static runs and dialogue export
    lazy_path(
        "static-runs/", "chat.api.static_runs.StaticRunListCreateApi", name="api-static-run-list"
    ),
    lazy_path(
        "static-runs/<int:pk>/",
        "chat.api.static_runs.StaticRunDetailApi",
        name="api-static-run-detail",
    ),
    lazy_path(
        "static-runs/<int:pk>/cancel/",
        "chat.api.static_runs.StaticRunCancelApi",
        name="api-static-run-cancel",
    ),
    lazy_path(
        "static-runs/<int:pk>/retry/",
        "chat.api.static_runs.StaticRunRetryApi",
        name="api-static-run-retry",
    ),
    lazy_path(
        "campaigns/<int:pk>/dialogues.jsonl",
        "chat.api.dialogues.CampaignDialoguesExportApi",
        name="api-campaign-dialogues-export",
    ),
    lazy_path(
        "dialogues/import/", "chat.api.dialogues.DialogueImportApi", name="api-dialogue-import"
    ),
    # Pairwise votes
    lazy_path("votes/", "chat.api.votes.VoteListApi", name="api-vote-list"),
    lazy_path("votes/import/", "chat.api.votes.VoteImportApi", name="api-vote-import"),
    lazy_path("votes/export/", "chat.api.votes.VoteExportApi", name="api-vote-export"),
]
