from django.contrib import admin
from django.urls import include, path

from reasoningbank_site import error_pages, health, metrics
from reasoningbank_site.api import api
from reasoningbank_site.middleware import handler500 as database_aware_handler500

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("favicon.ico", error_pages.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("accounts.urls")),
    path("", include("memories.urls")),
    path("", include("trajectories.urls")),
]

handler500 = database_aware_handler500
handler404 = error_pages.handler404
handler403 = error_pages.handler403
