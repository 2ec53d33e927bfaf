import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from reasoningbank_site.request_body import discarding_unread_body

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")
# A body the app did not read (a 413 answered from its Content-Length) is discarded before the answer
# is sent, so the client gets the answer rather than a connection reset.
application = discarding_unread_body(get_wsgi_application())

# Warm up before this process accepts a request (gunicorn loads the app in each worker before
# it listens): the URLconf imported (every view and API module, which the first request would
# otherwise pay for), the embedding model loaded, one query embedded,
# one vector search run, so the first retrieval after a restart costs what any other does
# (bench/retrieval_restart.py measures it).
# Here rather than in AppConfig.ready, so management commands and the test suite never pay for it.
if settings.RB_EMBEDDING_PRELOAD:
    from django.urls import get_resolver

    from memories.serving.upkeep import retrieval_warm_up  # needs the app registry set up above

    get_resolver().url_patterns  # noqa: B018 (the import is the point)

    retrieval_warm_up()
