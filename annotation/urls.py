"""HTML routes of the annotation app. Each area adds its routes in its own block."""

from django.urls import path  # noqa: F401

app_name = "annotation"

urlpatterns = [
    # Rubrics
    # Review
    # Rating jobs, assignments, the annotation page, live per-turn rating in the chat
    # Agreement, human scores, exports, imports
]
