"""REST API routes of every app, under /api/."""

from django.urls import include, path

from core.security import TokenLoginApi

urlpatterns = [
    path("token/", TokenLoginApi.as_view(), name="api-token"),
    path("", include("chat.api_urls")),
    path("", include("annotation.api_urls")),
    path("", include("metrics.api_urls")),
    path("", include("judges.api_urls")),
]
