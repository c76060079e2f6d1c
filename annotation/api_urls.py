"""API routes of the annotation app (under /api/). Each area adds its routes in its own block."""

from django.urls import path  # noqa: F401

urlpatterns = [
    # Rubrics
    # Review
    # Rating jobs, assignments, ratings
    # Agreement, human scores, exports, imports
]
