"""CSP, Permissions-Policy, production security settings behind
RB_SECURE=1, and no inline script/handlers in templates (the CSP forbids them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.urls import reverse

TEMPLATES = Path(settings.BASE_DIR) / "templates"


def test_every_page_sends_csp_and_permissions_policy(client, owner, bank):
    client.force_login(owner)
    for url in (reverse("accounts:home"), reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})):
        response = client.get(url)
        assert response.status_code == 200
        csp = response["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
        assert "camera=()" in response["Permissions-Policy"]
        assert response["X-Content-Type-Options"] == "nosniff"


def test_login_page_has_csp_too(client, db):
    response = client.get(reverse("accounts:login"))
    assert "Content-Security-Policy" in response and "Permissions-Policy" in response


def test_templates_hold_no_inline_script_or_event_handlers():
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        for match in re.finditer(r"<script\b[^>]*>", text):
            if "src=" not in match.group(0):
                offenders.append(f"{path.name}: inline <script>")
        if re.search(r"\son[a-z]+\s*=", text) or re.search(r"\shx-on[:-]", text):
            offenders.append(f"{path.name}: inline event handler")
        if "javascript:" in text:
            offenders.append(f"{path.name}: javascript: URL")
    assert not offenders, offenders


def test_htmx_does_not_inject_its_indicator_style():
    base = (TEMPLATES / "base.html").read_text()
    config = re.search(r"<meta name=\"htmx-config\" content='([^']+)'>", base).group(1)
    assert json.loads(config)["includeIndicatorStyles"] is False


def _settings_with(env: dict) -> dict:
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({k: getattr(s, k, None) for k in ['SECURE_HSTS_SECONDS', 'SESSION_COOKIE_SECURE', "
        "'CSRF_COOKIE_SECURE', 'SECURE_SSL_REDIRECT', 'SECURE_PROXY_SSL_HEADER']}))"
    )
    full_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings", **env}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, env=full_env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_rb_secure_switches_on_production_security_settings():
    off = _settings_with({"RB_SECURE": "0"})
    assert not off["SECURE_HSTS_SECONDS"] and not off["SESSION_COOKIE_SECURE"]
    on = _settings_with({"RB_SECURE": "1"})
    assert on["SECURE_HSTS_SECONDS"] >= 31536000
    assert on["SESSION_COOKIE_SECURE"] and on["CSRF_COOKIE_SECURE"] and on["SECURE_SSL_REDIRECT"]
    assert on["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
