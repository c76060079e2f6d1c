"""A JSON parser for the API that refuses what the database cannot store, with a 400."""

from __future__ import annotations

import codecs
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.json import UnsafeJSON, loads_untrusted


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, plus: no NUL character, no unpaired surrogate escape, bounded nesting.

    Without it `{"text": "\\ud800"}` or 100,000 nested lists parse, then fail as a 500 deep in
    a service or the database driver; here the client gets a 400 that names the field.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
        except UnicodeDecodeError as exc:
            raise ParseError(f"JSON parse error - not valid {encoding}: {exc.reason}") from None
        try:
            return loads_untrusted(text)
        except UnsafeJSON as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
