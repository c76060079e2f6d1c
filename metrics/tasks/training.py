"""Celery tasks: training."""
