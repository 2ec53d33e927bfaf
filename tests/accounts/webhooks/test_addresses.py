"""The webhook address rules for the IPv6 forms that carry an IPv4 address,
and for the ranges that are not routed on the internet: refused by default,
allowed for self-hosted receivers (RB_WEBHOOK_ALLOW_PRIVATE) unless what they
carry is link-local or a metadata address; checked again at each delivery."""

from __future__ import annotations

import socket

import pytest

from accounts.models import WebhookDelivery, WebhookSubscription
from accounts.webhooks.addresses import ReceiverRefused
from accounts.webhooks.subscriptions import webhook_subscription_create
from tests import factories
from tests.webhook_receiver import Receiver

# Each carries 127.0.0.1 (or is a range that is not routed on the internet).
PRIVATE_FORMS = {
    "ipv4-mapped": "::ffff:127.0.0.1",
    "ipv4-compatible": "::127.0.0.1",
    "ipv4-translated": "::ffff:0:7f00:1",
    "nat64 well-known": "64:ff9b::7f00:1",
    "nat64 local-use, /96": "64:ff9b:1::7f00:1",
    "nat64 local-use, /48": "64:ff9b:1:7f00:1::",
    "nat64 local-use, /64": "64:ff9b:1:0:7f:0:1:0",
    "6to4": "2002:7f00:1::1",
    "teredo (client obfuscated)": "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "ipv4-compatible private": "::10.0.0.1",
    "site-local": "fec0::1",
    "ietf protocol assignments": "192.0.0.192",
}
# Each carries 169.254.169.254, where cloud metadata answers: never allowed.
METADATA_FORMS = {
    "ipv4-compatible": "::169.254.169.254",
    "ipv4-translated": "::ffff:0:a9fe:a9fe",
    "nat64 well-known": "64:ff9b::a9fe:a9fe",
    "nat64 local-use, /48": "64:ff9b:1:a9fe:a9:fe00::",
    "6to4": "2002:a9fe:a9fe::1",
    "teredo": "2001:0:4136:e378:8000:63bf:5601:5601",
}
# Public IPv4 addresses carried by forms routed on the internet: allowed by default.
PUBLIC_FORMS = {"nat64 well-known": "64:ff9b::808:808", "6to4": "2002:808:808::1", "ipv4-mapped": "::ffff:8.8.8.8"}


def url_for(address: str) -> str:
    return f"http://[{address}]/hook" if ":" in address else f"http://{address}/hook"


@pytest.mark.parametrize("address", PRIVATE_FORMS.values(), ids=PRIVATE_FORMS.keys())
def test_private_forms_are_refused_by_default(bank, settings, address):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(ReceiverRefused, match="RB_WEBHOOK_ALLOW_PRIVATE"):
        webhook_subscription_create(bank=bank, url=url_for(address), events="item.proposed")
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize("address", PRIVATE_FORMS.values(), ids=PRIVATE_FORMS.keys())
def test_private_forms_are_allowed_for_self_hosted_receivers(bank, settings, address):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    issued = webhook_subscription_create(bank=bank, url=url_for(address), events="item.proposed")
    assert WebhookSubscription.objects.get().pk == issued.subscription.pk


@pytest.mark.parametrize("allow_private", [False, True])
@pytest.mark.parametrize("address", METADATA_FORMS.values(), ids=METADATA_FORMS.keys())
def test_forms_carrying_a_metadata_address_are_always_refused(bank, settings, address, allow_private):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = allow_private
    with pytest.raises(ReceiverRefused, match=r"carries the IPv4 address 169\.254\.169\.254.*link-local"):
        webhook_subscription_create(bank=bank, url=url_for(address), events="item.proposed")


@pytest.mark.parametrize("address", PUBLIC_FORMS.values(), ids=PUBLIC_FORMS.keys())
def test_forms_carrying_a_public_address_are_allowed_by_default(bank, settings, address):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = False
    webhook_subscription_create(bank=bank, url=url_for(address), events="item.proposed")
    assert WebhookSubscription.objects.count() == 1


def test_a_name_that_later_resolves_to_a_form_carrying_loopback_gets_nothing(
    bank, trajectory, settings, monkeypatch, eager_celery, django_capture_on_commit_callbacks
):
    """DNS rebinding: the name passed at subscription, then answers ::127.0.0.1 at delivery time."""
    settings.RB_WEBHOOK_ALLOW_PRIVATE = False
    settings.RB_WEBHOOK_MAX_ATTEMPTS = 1
    receiver = Receiver().start()
    port = int(receiver.url.split(":")[2].split("/")[0])
    answers = iter(["8.8.8.8", "::127.0.0.1"])
    real_getaddrinfo = socket.getaddrinfo

    def resolver(host, *args, **kwargs):  # the system resolver, as a rebinding DNS server would answer
        if host != "rebind.example":
            return real_getaddrinfo(host, *args, **kwargs)
        address = next(answers)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sockaddr = (address, port, 0, 0) if family == socket.AF_INET6 else (address, port)
        return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    try:
        webhook_subscription_create(bank=bank, url=f"http://rebind.example:{port}/hook", events="item.proposed")
        with django_capture_on_commit_callbacks(execute=True):
            factories.propose_item(bank, trajectory)
    finally:
        receiver.stop()
    delivery = WebhookDelivery.objects.get()
    assert receiver.received == [] and delivery.status == "failed" and delivery.last_status_code is None
    assert "resolves to ::7f00:1 carries the IPv4 address 127.0.0.1" in delivery.last_error
