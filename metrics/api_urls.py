"""API routes of the metrics app (under /api/). Each area adds its routes in its own block."""

from django.urls import path  # noqa: F401

from metrics.api import discriminators

urlpatterns = [
    # Metric runs
    # Reports
    # Learned metrics (discriminator training)
    path(
        "discriminators/",
        discriminators.DiscriminatorListApi.as_view(),
        name="api-discriminator-list",
    ),
    path(
        "discriminators/<int:pk>/",
        discriminators.DiscriminatorDetailApi.as_view(),
        name="api-discriminator-detail",
    ),
]
