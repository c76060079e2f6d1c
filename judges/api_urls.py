"""API routes of the judges app (under /api/)."""

from django.urls import path

from judges import api

urlpatterns = [
    path("judges/", api.JudgeListApi.as_view(), name="api-judge-list"),
    path("judges/<int:pk>/", api.JudgeDetailApi.as_view(), name="api-judge-detail"),
    path("judges/<int:pk>/versions/", api.JudgeVersionApi.as_view(), name="api-judge-version"),
    path("judges/<int:pk>/preview/", api.PreviewApi.as_view(), name="api-judge-preview"),
    path("judges/<int:pk>/estimate/", api.EstimateApi.as_view(), name="api-judge-estimate"),
    path("judges/<int:pk>/runs/", api.JudgeRunApi.as_view(), name="api-judge-run"),
    path("judge-runs/<int:pk>/", api.JudgeRunDetailApi.as_view(), name="api-judge-run-detail"),
    path(
        "judge-runs/<int:pk>/answers/",
        api.JudgeAnswerListApi.as_view(),
        name="api-judge-answers",
    ),
]
