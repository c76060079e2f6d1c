from core.lazy_urls import lazy_path

urlpatterns = [
    lazy_path("healthz", "core.views.healthz", name="healthz"),
]
