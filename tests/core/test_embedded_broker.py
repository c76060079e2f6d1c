"""The embedded broker polls its SQLite queue often (issue 11 item 15: kombu's 1 s default cost a
small metric run a second per chunk), and a chord's callback is checked often without Redis."""

from django.conf import settings
from django.test import override_settings

from config.broker import Transport
from config.celery import app


@override_settings(EMBEDDED_BROKER_POLLING_INTERVAL=0.05)
def test_an_sqla_broker_url_gets_the_transport_with_the_configured_polling_interval(tmp_path):
    with app.connection_for_write(f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}") as connection:
        transport = connection.transport
        assert isinstance(transport, Transport)
        assert transport.polling_interval == 0.05


def test_the_defaults_poll_well_under_a_second():
    assert settings.EMBEDDED_BROKER_POLLING_INTERVAL <= 0.2
    assert app.conf.result_chord_retry_interval <= 0.5
