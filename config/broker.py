"""The embedded broker: kombu's SQLAlchemy transport with a configurable polling interval.

kombu's virtual transports sleep ``polling_interval`` (1 s by default) whenever a poll of their
queues finds nothing; with one message fetched per free worker process, a metric run of a few
dozen short chunks then spends most of its time asleep (issue 11 item 15: 16 chunks took 22 s,
each costing a second of polling). The SQLAlchemy transport hands every transport option to
``create_engine()``, so the interval cannot be given as an option; this subclass takes it from
the ``EMBEDDED_BROKER_POLLING_INTERVAL`` setting instead. A poll is one indexed SELECT on a local
SQLite file, so a short interval costs little.
"""

from __future__ import annotations

from django.conf import settings
from kombu.transport import sqlalchemy


class Transport(sqlalchemy.Transport):
    def __init__(self, client, **kwargs):
        super().__init__(client, **kwargs)
        self.polling_interval = settings.EMBEDDED_BROKER_POLLING_INTERVAL
