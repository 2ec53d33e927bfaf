"""gunicorn config for tests/memories/test_retrieval_after_answer.py: each worker
holds every retrieval's log for HELD_S seconds after its answer, so a test can
stop the server while a log is still owed."""

import time

HELD_S = 1.5


def post_worker_init(worker):
    import memories.services.retrieval as retrieval

    real = retrieval._retrieval_log

    def held(event):
        time.sleep(HELD_S)
        real(event)

    retrieval._retrieval_log = held
