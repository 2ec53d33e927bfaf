import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")
application = get_wsgi_application()

# Load the embedding model now (in the background), not on the first retrieval; /readyz waits for it.
# Here rather than in AppConfig.ready, so management commands and the test suite never pay for it.
if settings.RB_EMBEDDING_PRELOAD:
    from memories.embeddings import preload  # needs the app registry set up above

    preload()
