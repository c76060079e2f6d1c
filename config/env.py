"""Reading settings from the environment strictly: a value that does not parse stops start-up
with an error naming its variable.

django-environ reads any word it does not know as `false` (`SITE_HTTPS=ture` turned transport
security off without a word), and its integer, URL and port errors do not say which variable
they came from. `StrictEnv` keeps its API and its accepted spellings and refuses the rest
(issue 23, item 5).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = frozenset(environ.Env.BOOLEAN_TRUE_STRINGS)  # true, on, ok, y, yes, 1
FALSE_WORDS = frozenset({"false", "off", "n", "no", "0"})

# What each URL setting may point at (the schemes Celery/kombu and redis-py understand here).
BROKER_SCHEMES = ("redis", "rediss", "sqla+sqlite", "sqla+postgresql", "amqp", "amqps", "memory")
RESULT_SCHEMES = ("redis", "rediss", "db+sqlite", "db+postgresql", "rpc")
STREAMS_SCHEMES = ("redis", "rediss", "memory")


class StrictEnv(environ.Env):
    """`environ.Env` whose booleans, numbers and URLs must parse; errors name the variable."""

    def get_value(
        self,
        var: str,
        cast: Any = None,
        default: Any = environ.Env.NOTSET,
        parse_default: bool = False,
    ) -> Any:
        raw = self.ENVIRON.get(self.prefix + var)
        if raw is not None and cast is bool and raw.strip().lower() not in TRUE_WORDS | FALSE_WORDS:
            raise ImproperlyConfigured(
                f"{var}={raw!r} is not a boolean: write true or false (also 1/0, yes/no, on/off)."
            )
        if raw is not None and cast in (int, float):
            # django-environ drops any character that is not a digit from a float ("1m" -> 1.0).
            try:
                number = cast(raw.strip())
            except ValueError:
                number = None
            if number is None or not math.isfinite(number):
                kind = "an integer" if cast is int else "a number"
                raise ImproperlyConfigured(f"{var}={raw!r} is not {kind}.")
            return number
        try:
            return super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except (ValueError, TypeError) as exc:
            raise ImproperlyConfigured(f"{var}={raw!r} is not valid ({exc}).") from None

    def db_url(
        self, var: str = "DATABASE_URL", default: Any = environ.Env.NOTSET, engine: Any = None
    ) -> dict:
        check_url(var, self.str(var, default=default), self.DB_SCHEMES)
        return super().db_url(var, default=default, engine=engine)

    def cache_url(
        self, var: str = "CACHE_URL", default: Any = environ.Env.NOTSET, backend: Any = None
    ) -> dict:
        check_url(var, self.str(var, default=default), self.CACHE_SCHEMES)
        return super().cache_url(var, default=default, backend=backend)

    def url_str(self, var: str, *, default: str, schemes: Iterable[str]) -> str:
        """A URL kept as a string (Celery's and the reply streams'), checked like the others."""
        return check_url(var, self.str(var, default=default), schemes)


def check_url(var: str, value: str, schemes: Iterable[str]) -> str:
    """`value` if it is a URL with one of `schemes` and a numeric port (if any), else an error
    naming `var`."""
    allowed = sorted(set(schemes))
    parts = urlsplit(value)
    if "://" not in value or parts.scheme not in allowed:
        raise ImproperlyConfigured(
            f"{var}={value!r} is not a URL this platform reads: it must start with one of "
            + ", ".join(f"{scheme}://" for scheme in allowed)
            + "."
        )
    try:
        parts.port  # noqa: B018 - parsing it is the check
    except ValueError:
        raise ImproperlyConfigured(f"{var}={value!r} has a port that is not a number.") from None
    return value
