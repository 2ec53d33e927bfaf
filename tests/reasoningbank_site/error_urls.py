"""The project's URLs plus a view that raises, for the 500 page tests (the
handlers must be named in the root URLconf, so they are repeated here)."""

from django.urls import path

from reasoningbank_site.urls import handler403, handler404, handler500, urlpatterns  # noqa: F401


def boom(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("boom/", boom), *urlpatterns]
