"""One error shape: what a refused input says, and how the API answers it."""

from __future__ import annotations

from django.test import RequestFactory
from rest_framework.exceptions import NotFound

from core.api import exception_handler
from core.errors import ServiceError


def test_the_text_names_the_place_before_the_problem() -> None:
    assert str(ServiceError("expected a list", line=17, field="history")) == (
        "line 17, field 'history': expected a list"
    )
    assert str(ServiceError("not a number", row=2, column="value")) == (
        "row 2, column 'value': not a number"
    )
    assert str(ServiceError("nothing to score")) == "nothing to score"


def test_an_area_can_write_the_field_as_a_prefix_or_inside_its_message() -> None:
    class FormError(ServiceError):
        location_style = "prefix"

    class Translated(ServiceError):
        location_style = "in_message"

    assert str(FormError("unknown setting x", field="settings")) == "settings: unknown setting x"
    assert str(Translated("name：已存在", field="name")) == "name：已存在"


def test_the_api_answers_a_service_error_with_one_body_shape() -> None:
    request = RequestFactory().post("/api/x/")
    response = exception_handler(
        ServiceError("bad speaker", line=2, field="turns[1].speaker"), {"request": request}
    )
    assert response is not None and response.status_code == 400
    assert response.data == {
        "detail": "line 2, field 'turns[1].speaker': bad speaker",
        "field": "turns[1].speaker",
        "line": 2,
        "row": None,
        "column": None,
        "errors": {},
    }


def test_other_exceptions_keep_drfs_answers() -> None:
    response = exception_handler(NotFound(), {"request": RequestFactory().get("/api/x/")})
    assert response is not None and response.status_code == 404
    assert exception_handler(RuntimeError("boom"), {}) is None
