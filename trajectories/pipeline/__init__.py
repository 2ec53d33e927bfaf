"""The learning pipeline: a stored trajectory is judged, then distilled into
proposed memory items (or contrasted with its MaTTS group), by Celery tasks
(``tasks``) that call the stages (``advance``, ``judge``, ``distill``,
``matts``). Every status move goes through ``transitions``; ``dispatch`` and
``sweeper`` make sure no row is forgotten; ``llm`` is the one door to the
model. Stages and services never import the tasks: they enqueue work by task
name (``reasoningbank_site.celery.enqueue_on_commit``)."""
