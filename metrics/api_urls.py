"""API routes of the metrics app (under /api/). Each area adds its routes in its own block."""

from django.urls import path  # noqa: F401

urlpatterns = [
    # Metric runs
    # Reports
    # Learned metrics (discriminator training)
]
