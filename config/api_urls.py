"""REST API routes of every app, under /api/."""

from django.urls import include, path
from rest_framework.authtoken.views import obtain_auth_token

urlpatterns = [
    path("token/", obtain_auth_token, name="api-token"),
    path("", include("chat.api_urls")),
    path("", include("annotation.api_urls")),
    path("", include("metrics.api_urls")),
]
