"""A tiny NinjaAPI that exercises TokenAuth through real HTTP with the
project's own error handlers, independent of which agent endpoints exist."""

from django.urls import path
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from accounts.auth import ApiError, TokenAuth
from reasoningbank_site.api import on_api_error, on_auth_error

probe_api = NinjaAPI(urls_namespace="probe-api", docs_url=None)
probe_api.add_exception_handler(ApiError, on_api_error)
probe_api.add_exception_handler(AuthenticationError, on_auth_error)


@probe_api.get("/ping", auth=TokenAuth(scope="retrieve"))
def ping(request):
    return {"bank": str(request.bank.public_id), "token": request.api_token.prefix}


urlpatterns = [path("probe/", probe_api.urls)]
