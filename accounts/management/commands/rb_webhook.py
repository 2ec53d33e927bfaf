"""Manage a bank's webhooks from the shell.

    manage.py rb_webhook add --bank TEAM/BANK --url URL --events item.approved,item.archived [--description TEXT]
    manage.py rb_webhook list [--bank TEAM/BANK]
    manage.py rb_webhook remove ID

``add`` prints only the signing secret on stdout (``SECRET=$(manage.py rb_webhook add …)``);
everything meant for a human goes to stderr."""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError

from accounts.errors import AccountsError
from accounts.management.commands.rb_token import _find_bank, _when
from accounts.models import WebhookSubscription
from accounts.webhooks.events import EVENTS
from accounts.webhooks.subscriptions import webhook_subscription_create, webhook_subscription_delete


class Command(BaseCommand):
    help = "Add, list and remove the webhooks of a bank."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{add,list,remove}")
        add = sub.add_parser("add", help="Subscribe a URL to events; prints only the signing secret on stdout.")
        add.add_argument("--bank", required=True, help="Bank slug, or TEAM/SLUG when several teams use the slug.")
        add.add_argument("--url", required=True, help="The receiver (http:// or https://).")
        add.add_argument("--events", required=True, help=f"Comma-separated: {', '.join(EVENTS)}.")
        add.add_argument("--description", default="", help="A label shown in lists.")
        listing = sub.add_parser("list", help="List webhooks (of one bank, or of all).")
        listing.add_argument("--bank", help="Bank slug or TEAM/SLUG.")
        remove = sub.add_parser("remove", help="Remove a webhook by the id shown in `list`.")
        remove.add_argument("id", help="The webhook's id.")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _add(self, options) -> None:
        bank = _find_bank(options["bank"])
        try:
            issued = webhook_subscription_create(
                bank=bank, url=options["url"], events=options["events"], description=options["description"]
            )
        except AccountsError as exc:
            raise CommandError(exc.message) from None
        s = issued.subscription
        self.stderr.write(
            f"Added webhook {s.public_id} for bank {bank}: {s.url} gets {', '.join(s.events)}. "
            "The signing secret below is shown once; store it in the receiver now."
        )
        self.stdout.write(issued.secret)

    def _list(self, options) -> None:
        subscriptions = WebhookSubscription.objects.select_related("bank__team").order_by("bank_id", "created_at")
        if options["bank"]:
            subscriptions = subscriptions.filter(bank=_find_bank(options["bank"]))
        header = ("ID", "BANK", "URL", "EVENTS", "STATE", "CREATED")
        rows = [
            (
                s.public_id,
                s.bank,
                s.url,
                ",".join(s.events),
                "enabled" if s.enabled else f"disabled {_when(s.disabled_at)}",
                _when(s.created_at),
            )
            for s in subscriptions
        ]
        if not rows:
            self.stderr.write("No webhooks.")
            return
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            self.stdout.write("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())

    def _remove(self, options) -> None:
        try:
            public_id = uuid.UUID(options["id"].strip())
        except ValueError:
            raise CommandError(f"'{options['id']}' is not a webhook id (see `rb_webhook list`).") from None
        subscription = WebhookSubscription.objects.select_related("bank__team").filter(public_id=public_id).first()
        if subscription is None:
            raise CommandError(f"No webhook {public_id}. See `rb_webhook list`.")
        webhook_subscription_delete(subscription=subscription)
        self.stderr.write(f"Removed webhook {public_id} ({subscription.url}) of bank {subscription.bank}.")
