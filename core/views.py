from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core.health import health_check


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report = health_check(
        worker_timeout=settings.HEALTH_WORKER_TIMEOUT,
        worker_max_age=settings.HEALTH_WORKER_CHECK_MAX_AGE,
    )
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
