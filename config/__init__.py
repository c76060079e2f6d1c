"""Project package: the card's `platform` (a package of that name shadows the stdlib; README).

The Celery app lives in `config.celery` (`celery -A config` finds it there) and is not imported
here: every web process and management command would load Celery and kombu for it. The task
modules import it, so a task is always sent through this app and its broker.
"""
