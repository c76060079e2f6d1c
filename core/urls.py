from django.urls import path

from core import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("workspaces/switch/", views.workspace_switch, name="workspace-switch"),
    path("workspaces/members/", views.workspace_members, name="workspace-members"),
    path("workspaces/audit/", views.workspace_audit, name="workspace-audit"),
]
