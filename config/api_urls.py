"""REST API routes of every app, under /api/. Each view is imported on its first request
(core.lazy_urls): loading the URLconf loads no DRF serializer."""

from django.urls import include, path

from core.lazy_urls import lazy_path

urlpatterns = [
    lazy_path("token/", "core.api.TokenLoginApi", name="api-token"),
    path("", include("chat.api_urls")),
    path("", include("annotation.api_urls")),
    path("", include("metrics.api_urls")),
    path("", include("judges.api_urls")),
]
