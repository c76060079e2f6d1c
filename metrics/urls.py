"""HTML routes of the metrics app. Each area adds its routes in its own block."""

from django.urls import path  # noqa: F401

app_name = "metrics"

urlpatterns = [
    # Metric runs
    # Reports
    # Learned metrics (discriminator training)
]
