"""API routes of the judges app (under /api/)."""

from core.lazy_urls import lazy_path

urlpatterns = [
    lazy_path("judges/", "judges.api.JudgeListApi", name="api-judge-list"),
    lazy_path("judges/<int:pk>/", "judges.api.JudgeDetailApi", name="api-judge-detail"),
    lazy_path("judges/<int:pk>/versions/", "judges.api.JudgeVersionApi", name="api-judge-version"),
    lazy_path("judges/<int:pk>/preview/", "judges.api.PreviewApi", name="api-judge-preview"),
    lazy_path("judges/<int:pk>/estimate/", "judges.api.EstimateApi", name="api-judge-estimate"),
    lazy_path("judges/<int:pk>/runs/", "judges.api.JudgeRunApi", name="api-judge-run"),
    lazy_path("judge-runs/<int:pk>/", "judges.api.JudgeRunDetailApi", name="api-judge-run-detail"),
    lazy_path(
        "judge-runs/<int:pk>/answers/",
        "judges.api.JudgeAnswerListApi",
        name="api-judge-answers",
    ),
]
