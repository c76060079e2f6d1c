"""A view module loaded lazily by tests/core/test_workspaces.py, with a queryset declared at
import as forms and serializers declare theirs. Imported by nothing else."""

from django.http import HttpRequest, HttpResponse

from chat.models import Backend

DECLARED_AT_IMPORT = Backend.objects.all()


def backend_names(request: HttpRequest) -> HttpResponse:
    return HttpResponse(",".join(sorted(b.name for b in DECLARED_AT_IMPORT.all())))
