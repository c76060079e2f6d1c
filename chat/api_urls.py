"""API routes of the chat app (under /api/). Each area adds its routes in its own block."""

from django.urls import path

from chat.api import datasets

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
    # Campaigns
    # Live chat
    # Static runs and dialogue export
]
