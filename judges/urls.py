"""HTML routes of the judges app."""

from django.urls import path

from judges import views

app_name = "judges"

urlpatterns = [
    path("", views.judge_list, name="judge-list"),
    path("new/", views.judge_create, name="judge-create"),
    path("<int:pk>/", views.judge_detail, name="judge-detail"),
    path("<int:pk>/edit/", views.judge_edit, name="judge-edit"),
    path("<int:pk>/preview/", views.judge_preview, name="judge-preview"),
    path("<int:pk>/estimate/", views.judge_estimate, name="judge-estimate"),
    path("<int:pk>/run/", views.judge_run_start, name="judge-run-start"),
    path("runs/<int:pk>/", views.judge_run_detail, name="judge-run-detail"),
    path("reports/<int:pk>/<str:name>", views.report_file, name="report-file"),
]
