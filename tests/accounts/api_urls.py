"""A tiny NinjaAPI that exercises TokenAuth through real HTTP with the
project's own error handlers, independent of which agent endpoints exist."""

from django.urls import path
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from accounts.tokens.api import router as accounts_router
from accounts.tokens.auth import TokenAuth
from reasoningbank_site.api import on_auth_error, on_domain_error
from reasoningbank_site.errors import DomainError

probe_api = NinjaAPI(urls_namespace="probe-api", docs_url=None)
probe_api.add_exception_handler(DomainError, on_domain_error)
probe_api.add_exception_handler(AuthenticationError, on_auth_error)


@probe_api.get("/ping", auth=TokenAuth(scope="retrieve"))
def ping(request):
    return {"bank": str(request.bank.public_id), "token": request.api_token.prefix}


# The accounts router is mounted here too (ninja 1.7 allows several mounts), so
# its endpoint is tested whether or not the main API has mounted it yet.
probe_api.add_router("/", accounts_router)

urlpatterns = [path("probe/", probe_api.urls)]
