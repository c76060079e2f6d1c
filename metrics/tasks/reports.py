"""Celery tasks: reports."""
