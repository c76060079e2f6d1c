"""ASGI entry point (served by uvicorn): live chat streams need an async server."""

import os
import sys

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_asgi_application()
sys.setswitchinterval(settings.GIL_SWITCH_INTERVAL_MS / 1000)  # see the setting
