from core.lazy_urls import lazy_path

urlpatterns = [
    lazy_path("healthz", "core.views.healthz", name="healthz"),
    lazy_path("workspaces/switch/", "core.views.workspace_switch", name="workspace-switch"),
    lazy_path("workspaces/members/", "core.views.workspace_members", name="workspace-members"),
    lazy_path("workspaces/audit/", "core.views.workspace_audit", name="workspace-audit"),
]
