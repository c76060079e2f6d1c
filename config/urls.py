from csp.decorators import csp_exempt
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from core.lazy_urls import lazy_path

urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page says: answer with the static icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("", include("workspace.urls")),
    path("", include("core.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("chat/", include("chat.urls")),
    path("annotation/", include("annotation.urls")),
    path("metrics/", include("metrics.urls")),
    path("judges/", include("judges.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("config.api_urls")),
    # drf-spectacular's views (and DRF's serializers behind them) load on their first request.
    lazy_path(
        "api/schema/",
        "drf_spectacular.views.SpectacularAPIView",
        name="api-schema",
        permission_classes=[],
    ),
    lazy_path(
        "api/docs/",
        "drf_spectacular.views.SpectacularSwaggerView",
        name="api-docs",
        # Swagger UI's page boots with an inline script; it shows the public schema only.
        decorators=[csp_exempt()],
        url_name="api-schema",
        permission_classes=[],
    ),
]
