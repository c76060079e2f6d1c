from core.lazy_urls import lazy_path

urlpatterns = [
    lazy_path("", "workspace.views.home", name="home"),
]
