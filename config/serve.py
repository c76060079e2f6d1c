"""Starts the web server: uvicorn serving `config.asgi:application`, trusting proxy headers only
from the addresses in the FORWARDED_ALLOW_IPS setting.

uvicorn by default believes `X-Forwarded-For` and `X-Forwarded-Proto` from 127.0.0.1, so with
no proxy in front any local client (another user's process, a tunnel, a sidecar) could choose
the address it appears to come from, and step past the per-address login lockout and join limit
(issue 23, item 11). Here nobody is trusted unless the operator names the proxy.

`python -m config.serve [uvicorn options…]`: the Procfile, the image and docker-compose.yml.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

APPLICATION = "config.asgi:application"


def proxy_options(allowed: Sequence[str]) -> list[str]:
    """uvicorn's options for trusting proxy headers from exactly `allowed` (none: off)."""
    if not allowed:
        return ["--no-proxy-headers"]
    return ["--proxy-headers", "--forwarded-allow-ips", ",".join(allowed)]


def uvicorn_args(argv: Sequence[str]) -> list[str]:
    """The command line uvicorn runs with: the application, the proxy options the settings
    call for, then the caller's options (host, port, workers…)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    return [APPLICATION, *proxy_options(settings.FORWARDED_ALLOW_IPS), *argv]


def main(argv: Sequence[str] | None = None) -> None:
    from uvicorn.main import main as uvicorn_command

    uvicorn_command.main(
        args=uvicorn_args(sys.argv[1:] if argv is None else argv), prog_name="uvicorn"
    )


if __name__ == "__main__":
    main()
