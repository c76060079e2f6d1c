"""Celery tasks: training learned discriminators (thin callers of the service)."""

from celery import shared_task

from metrics.services.discriminators import discriminator_train


@shared_task(name="metrics.tasks.training.train_discriminator")
def train_discriminator_task(discriminator_id: int) -> None:
    discriminator_train(discriminator_id)
