"""Small helpers the command tests share."""

from io import StringIO

from django.core.management import call_command


def run(*args, **options) -> tuple[str, str]:
    """Call a management command; return its (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def retrieve(client, token: str, query: str = "anything"):
    """POST /api/v1/retrieve with ``token`` as the bearer."""
    return client.post(
        "/api/v1/retrieve", {"query": query}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
