"""HTML routes of the chat app. Each area adds its routes in its own block."""

from django.urls import path

from chat.views import campaigns, datasets

app_name = "chat"

urlpatterns = [
    # Datasets
    path("datasets/", datasets.dataset_list, name="dataset-list"),
    path("datasets/upload/", datasets.dataset_upload, name="dataset-upload"),
    path("datasets/<int:pk>/", datasets.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/export.jsonl", datasets.dataset_export, name="dataset-export"),
    # Backends
    # Campaigns and invite links
    path("join/<str:token>/", campaigns.campaign_join, name="campaign-join"),
    # Live chat
    # Static runs and dialogue export
]
