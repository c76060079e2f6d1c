"""API routes of the chat app (under /api/). Each area adds its routes in its own block."""

from django.urls import path

from chat.api import (  # Static runs and dialogue export
    backends,
    campaigns,
    datasets,
    dialogues,
    static_runs,
)

urlpatterns = [
    # Datasets
    path("datasets/", datasets.DatasetListApi.as_view(), name="api-dataset-list"),
    path("datasets/import/", datasets.DatasetImportApi.as_view(), name="api-dataset-import"),
    path("datasets/<int:pk>/", datasets.DatasetDetailApi.as_view(), name="api-dataset-detail"),
    path("datasets/<int:pk>/samples/", datasets.SampleListApi.as_view(), name="api-sample-list"),
    path(
        "datasets/<int:pk>/export.jsonl",
        datasets.DatasetExportApi.as_view(),
        name="api-dataset-export",
    ),
    # Backends
    path("backends/", backends.BackendListCreateApi.as_view(), name="api-backend-list"),
    path("backends/<int:pk>/", backends.BackendDetailApi.as_view(), name="api-backend-detail"),
    path(
        "backends/<int:pk>/deactivate/",
        backends.BackendDeactivateApi.as_view(),
        name="api-backend-deactivate",
    ),
    path("backends/<int:pk>/test/", backends.BackendTestApi.as_view(), name="api-backend-test"),
    # Campaigns
    path("campaigns/", campaigns.CampaignListApi.as_view(), name="api-campaign-list"),
    path("campaigns/<int:pk>/", campaigns.CampaignDetailApi.as_view(), name="api-campaign-detail"),
    path(
        "campaigns/<int:pk>/activate/",
        campaigns.CampaignActivateApi.as_view(),
        name="api-campaign-activate",
    ),
    path(
        "campaigns/<int:pk>/close/", campaigns.CampaignCloseApi.as_view(), name="api-campaign-close"
    ),
    path(
        "campaigns/<int:pk>/progress/",
        campaigns.CampaignProgressApi.as_view(),
        name="api-campaign-progress",
    ),
    # Live chat
    # Static runs and dialogue export
    path("static-runs/", static_runs.StaticRunListCreateApi.as_view(), name="api-static-run-list"),
    path(
        "static-runs/<int:pk>/",
        static_runs.StaticRunDetailApi.as_view(),
        name="api-static-run-detail",
    ),
    path(
        "static-runs/<int:pk>/cancel/",
        static_runs.StaticRunCancelApi.as_view(),
        name="api-static-run-cancel",
    ),
    path(
        "static-runs/<int:pk>/retry/",
        static_runs.StaticRunRetryApi.as_view(),
        name="api-static-run-retry",
    ),
    path(
        "campaigns/<int:pk>/dialogues.jsonl",
        dialogues.CampaignDialoguesExportApi.as_view(),
        name="api-campaign-dialogues-export",
    ),
    path("dialogues/import/", dialogues.DialogueImportApi.as_view(), name="api-dialogue-import"),
]
