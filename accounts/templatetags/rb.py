"""Template helpers shared by every page."""

import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder
from django.urls import reverse

register = template.Library()

# (url name, label): a bank's pages in nav order.
BANK_PAGES = [
    ("trajectories:dashboard", "Dashboard"),
    ("memories:review", "Review"),
    ("memories:items", "Memories"),
    ("trajectories:list", "Trajectories"),
    ("memories:playground", "Playground"),
    ("trajectories:impact", "Impact"),
    ("trajectories:judge", "Judge"),
    ("trajectories:export", "Export"),
    ("accounts:bank_tokens", "Tokens"),
    ("accounts:bank_settings", "Settings"),
    ("accounts:bank_audit", "Audit"),
]


@register.inclusion_tag("includes/banknav.html", takes_context=True)
def bank_nav(context, bank):
    request = context.get("request")
    current = request.path if request else ""
    links = []
    for name, label in BANK_PAGES:
        url = reverse(name, kwargs={"bank_id": bank.public_id})
        active = current == url or (url != "/" and current.startswith(url) and name != "trajectories:dashboard")
        links.append({"url": url, "label": label, "active": active})
    return {"bank_nav": links}


@register.filter
def compact_json(value) -> str:
    """A before/after snapshot as one line of JSON for the audit log."""
    return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(", ", ": "))
