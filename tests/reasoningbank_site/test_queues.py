"""Which queue each task goes to (reasoningbank_site/workers.py), as the app's router decides it when a
service publishes: webhook deliveries and per-tenant bulk work never land on the pipeline's queue."""

import pytest

from reasoningbank_site.celery import app as celery_app


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("trajectories.process", "celery"),
        ("trajectories.distill", "celery"),
        ("memories.embed_item", "celery"),
        ("trajectories.sweep", "maintenance"),
        ("accounts.webhooks_sweep", "maintenance"),
        ("accounts.webhook_deliver", "webhooks"),
        ("trajectories.experiment_run", "bulk"),
        # Routed by name, whichever module registers it.
        ("memories.release_import", "bulk"),
    ],
)
def test_each_task_goes_to_its_queue(task, queue):
    assert celery_app.amqp.router.route({}, task)["queue"].name == queue
