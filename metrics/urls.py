"""HTML routes of the metrics app. Each area adds its routes in its own block."""

from django.urls import path  # noqa: F401

from metrics.views import discriminators

app_name = "metrics"

urlpatterns = [
    # Metric runs
    # Reports
    # Learned metrics (discriminator training)
    path("discriminators/", discriminators.discriminator_list, name="discriminator-list"),
    path("discriminators/new/", discriminators.discriminator_create, name="discriminator-create"),
    path(
        "discriminators/<int:pk>/",
        discriminators.discriminator_detail,
        name="discriminator-detail",
    ),
    path(
        "discriminators/<int:pk>/retry/",
        discriminators.discriminator_retry,
        name="discriminator-retry",
    ),
]
