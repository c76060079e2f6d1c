"""Celery tasks: runs."""
