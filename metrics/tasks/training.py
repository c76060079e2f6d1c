"""Celery tasks of the learned and reference-free metrics: discriminator training, follow-up item
selection (thin callers of the services)."""

from config.celery import app
from metrics.services.discriminators import discriminator_train
from metrics.services.followup_selection import selection_execute


@app.task(name="metrics.tasks.training.train_discriminator")
def train_discriminator_task(discriminator_id: int) -> None:
    discriminator_train(discriminator_id)


@app.task(name="metrics.tasks.training.select_followup_items")
def select_followup_items_task(selection_id: int) -> None:
    selection_execute(selection_id)
