"""Celery application.

Queues: `default` (housekeeping, health pings), `chat` (static generation runs), `metrics`
(lexical metrics, correlation reports) and `gpu` (model-heavy metrics, discriminator training).
"""

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

# `sqla+…` broker URLs (the embedded default) use our subclass, which polls more often.
TRANSPORT_ALIASES["sqla"] = "config.broker:Transport"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
