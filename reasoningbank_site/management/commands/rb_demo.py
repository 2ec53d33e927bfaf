"""Seed a local demo (idempotent): an ``admin`` superuser, team "Demo team",
bank "Web agent", a demo API token, a few demo trajectories in all three
input shapes, and a few approved memory items so a retrieve answers at once.

Every object is looked up before it is created, so running it again changes
nothing. Only token hashes are stored, so the demo token's secret is kept in
``$RB_DATA_DIR/demo-token.txt`` (mode 600) and read back from there."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.models import ApiToken, Bank, Membership, Role, Scope, Team
from accounts.selectors import api_token_for_secret
from accounts.services import api_token_create, api_token_revoke, bank_create, team_create

ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "admin"
TEAM_SLUG = "demo"
BANK_SLUG = "web-agent"
TOKEN_NAME = "demo"
# The query rb_run's banner shows; it must find at least one demo memory.
DEMO_QUERY = "Find the cheapest laptop sleeve with at least 4 stars"


def demo_token_path() -> Path:
    return Path(settings.DATA_DIR) / "demo-token.txt"


# --- Demo trajectories: one web-shopping / form-filling agent, three input shapes ----------

DEMO_TRAJECTORIES: list[dict] = [
    {
        "external_id": "demo-batteries",
        "agent": "demo-web-agent/1.0",
        "task": "Buy the cheapest pack of AA batteries with at least 4 stars and at least 8 batteries.",
        "outcome": "success",
        "reward": 1.0,
        "steps": [
            {"kind": "thought", "content": "Search first, then sort by price and check ratings and pack size."},
            {"kind": "action", "content": "type('#search', 'AA batteries'); press('Enter')"},
            {"kind": "observation", "content": "48 results. Sort: Featured. Filters: Brand, Rating, Pack size."},
            {"kind": "action", "content": "select('#sort', 'Price: low to high')"},
            {
                "kind": "observation",
                "content": "1) 4-pack $3.99 (3.1 stars) 2) 8-pack $6.49 (4.4 stars) 3) 12-pack $8.99 (4.6 stars)",
            },
            {
                "kind": "thought",
                "content": "The 4-pack is too small and under 4 stars; the 8-pack meets both criteria.",
            },
            {"kind": "action", "content": "click('8-pack AA, 4.4 stars'); click('#add-to-cart')"},
            {"kind": "observation", "content": "Cart (1): 8-pack AA batteries, $6.49"},
            {"kind": "answer", "content": "Added the 8-pack of AA batteries ($6.49, 4.4 stars) to the cart."},
        ],
        "final_answer": "Added the 8-pack of AA batteries ($6.49, 4.4 stars) to the cart.",
    },
    {
        "external_id": "demo-return-request",
        "agent": "demo-web-agent/1.0",
        "task": "Request a return for the blue desk lamp from my most recent order.",
        "outcome": "failure",
        "reward": 0.0,
        "steps": [
            {"kind": "action", "content": "click('Orders')"},
            {
                "kind": "observation",
                "content": "Orders: #1042 (Mar 3) desk lamp, blue; #1017 (Feb 12) desk lamp, white",
            },
            {"kind": "action", "content": "click('#order-1017 Return items')"},
            {"kind": "observation", "content": "Return window closed on Mar 1 for order #1017."},
            {"kind": "thought", "content": "Returns seem closed; I will report that."},
            {"kind": "answer", "content": "The return window for the desk lamp has closed."},
        ],
        "final_answer": "The return window for the desk lamp has closed.",
    },
    {
        "external_id": "demo-booking",
        "agent": "demo-web-agent/1.0",
        "task": "Book the earliest available dentist appointment next week in the afternoon.",
        "steps": [
            {"kind": "action", "content": "click('Book appointment')"},
            {"kind": "observation", "content": "Date picker shows this week. Buttons: '< Prev week', 'Next week >'."},
            {"kind": "action", "content": "click('Next week >')"},
            {"kind": "observation", "content": "Mon: 9:00, 10:30. Tue: 14:00, 16:30. Wed: 13:15."},
            {"kind": "thought", "content": "Afternoon means 12:00 or later; the earliest is Tuesday 14:00."},
            {"kind": "action", "content": "click('Tue 14:00'); click('Confirm')"},
            {"kind": "observation", "content": "Confirmation: appointment booked for Tuesday 14:00. Reference D-7731."},
            {"kind": "answer", "content": "Booked Tuesday 14:00 (reference D-7731)."},
        ],
        "final_answer": "Booked Tuesday 14:00 (reference D-7731).",
    },
    {
        "external_id": "demo-quote-form",
        "agent": "demo-web-agent/1.0 (openai tools)",
        "task": "Use the contact form to request a quote for 50 ergonomic office chairs delivered to Berlin.",
        "outcome": "success",
        "messages": [
            {"role": "system", "content": "You operate a web browser through tools. Finish the user's task."},
            {
                "role": "user",
                "content": "Use the contact form to request a quote for 50 ergonomic office chairs delivered to Berlin.",
            },
            {
                "role": "assistant",
                "content": "I'll open the contact page and fill the form.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "goto", "arguments": '{"url": "/contact"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": "Form fields: name, email, subject (select), quantity, city, message. Submit button.",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {
                            "name": "fill",
                            "arguments": '{"subject": "Request a quote", "quantity": "50", "city": "Berlin", "message": "Quote for 50 ergonomic office chairs, delivery to Berlin."}',
                        },
                    },
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "click", "arguments": '{"selector": "button[type=submit]"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "Filled 4 fields."},
            {
                "role": "tool",
                "tool_call_id": "call_3",
                "content": "Page: 'Thank you! Your request #Q-5521 was received. We reply within 2 business days.'",
            },
            {"role": "assistant", "content": "Quote request sent (reference Q-5521)."},
        ],
        "final_answer": "Quote request sent (reference Q-5521).",
    },
    {
        "external_id": "demo-newsletter",
        "agent": "demo-web-agent/1.0 (openai tools)",
        "task": "Subscribe jane.doe@example.com to the store newsletter.",
        "messages": [
            {"role": "user", "content": "Subscribe jane.doe@example.com to the store newsletter."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "fill", "arguments": '{"#newsletter-email": "jane.doe@example"}'},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "click", "arguments": '{"selector": "#subscribe"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "Filled 1 field."},
            {
                "role": "tool",
                "tool_call_id": "call_b",
                "content": "Inline error under the field: 'Please enter a valid email address.'",
            },
            {"role": "assistant", "content": "Done: jane.doe@example.com is subscribed to the newsletter."},
        ],
        "final_answer": "Done: jane.doe@example.com is subscribed to the newsletter.",
    },
    {
        "external_id": "demo-shipping-total",
        "agent": "demo-web-agent/1.0 (anthropic tools)",
        "task": "What is the total price, including shipping, of 2 wireless mice shipped to ZIP 94110?",
        "outcome": "success",
        "reward": 1.0,
        "messages": [
            {
                "role": "user",
                "content": "What is the total price, including shipping, of 2 wireless mice shipped to ZIP 94110?",
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll add two mice to the cart and read the checkout summary."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "add_to_cart",
                        "input": {"product": "wireless mouse", "quantity": 2},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": "Cart: 2 x Wireless mouse $14.99 = $29.98",
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_02", "name": "estimate_shipping", "input": {"zip": "94110"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_02",
                        "content": "Shipping: $4.99. Tax: $2.62. Order total: $37.59",
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "The total is $37.59 ($29.98 items + $4.99 shipping + $2.62 tax)."}
                ],
            },
        ],
        "final_answer": "The total is $37.59 ($29.98 items + $4.99 shipping + $2.62 tax).",
    },
    {
        "external_id": "demo-change-address",
        "agent": "demo-web-agent/1.0 (anthropic tools)",
        "task": "Change the default shipping address on my account to 12 Elm Street, Springfield.",
        "outcome": "failure",
        "messages": [
            {
                "role": "user",
                "content": "Change the default shipping address on my account to 12 Elm Street, Springfield.",
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_11", "name": "click", "input": {"text": "Account settings"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_11",
                        "content": "Addresses: Default - 4 Oak Ave, Springfield. [Edit]",
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_12",
                        "name": "fill_and_save",
                        "input": {"street": "12 Elm Street", "city": "Springfield"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_12",
                        "is_error": True,
                        "content": "Session expired. Please sign in again.",
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_13",
                        "name": "fill_and_save",
                        "input": {"street": "12 Elm Street", "city": "Springfield"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_13",
                        "is_error": True,
                        "content": "Session expired. Please sign in again.",
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "I could not save the new address."}]},
        ],
        "final_answer": "I could not save the new address.",
    },
]

# --- Approved demo memories (written as a reviewer would, after the runs above) -------------

DEMO_ITEMS: list[dict] = [
    {
        "title": "Sort by price before comparing candidates",
        "description": "Use when a shopping task asks for the cheapest (or most expensive) product meeting some criteria.",
        "content": "Sort the result list by price first, then walk down it and check every stated criterion "
        "(rating, size, quantity) on each candidate; the first one that meets all of them is the answer.",
    },
    {
        "title": "Confirm a form submission from the page, not from the click",
        "description": "Use after submitting any web form; do not use for forms that only save drafts.",
        "content": "After submitting, read the page for a confirmation message or reference number and look for "
        "inline validation errors; report success only when a confirmation is visible, otherwise fix the fields and resubmit.",
    },
    {
        "title": "Match the exact record before acting on it",
        "description": "Use when a task refers to one item among similar ones (an order, an appointment, an address).",
        "content": "Identify the target by every attribute the task gives (date, colour, recency) before clicking; "
        "when several records look alike, re-read the list and pick the one that matches all attributes.",
    },
    {
        "title": "Re-authenticate when the session expires, then retry once",
        "description": "Use when an action fails with a signed-out or session-expired message.",
        "content": "Repeating the same action after a session error will fail again; sign in first, navigate back to "
        "the same form, re-enter the values and submit once more.",
    },
]


def _have_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def write_secret(path: Path, secret: str) -> None:
    """Write ``secret`` readable by the owner only (created 600, never world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    path.chmod(0o600)


class Command(BaseCommand):
    help = "Seed the local demo data (admin user, team, bank, token, trajectories, memories). Idempotent."

    def add_arguments(self, parser):
        parser.add_argument(
            "--token-file",
            default=None,
            help="Where the demo token's secret is kept (default: $RB_DATA_DIR/demo-token.txt).",
        )

    def handle(self, *args, **options):
        token_path = Path(options["token_file"]) if options["token_file"] else demo_token_path()
        admin = self._admin()
        team = self._team(admin)
        bank = self._bank(team)
        token, secret = self._token(bank, admin, token_path)
        self._trajectories(bank, token)
        self._items(bank, admin)
        self.stdout.write(f"Demo bank {bank} ready; its API token is in {token_path}.")

    def _admin(self):
        User = get_user_model()
        admin = User.objects.filter(username=ADMIN_USERNAME).first()
        if admin is None:
            admin = User.objects.create_superuser(ADMIN_USERNAME, "admin@example.com", ADMIN_PASSWORD)
            self.stdout.write(
                self.style.WARNING(
                    f"Created superuser '{ADMIN_USERNAME}' with password '{ADMIN_PASSWORD}' "
                    "-- for a LOCAL DEMO only; change it before anyone else can reach this server."
                )
            )
        return admin

    def _team(self, admin) -> Team:
        team = Team.objects.filter(slug=TEAM_SLUG).first()
        if team is None:
            team = team_create(name="Demo team", slug=TEAM_SLUG, owner=admin)
            self.stdout.write("Created team 'Demo team' (demo).")
        else:
            Membership.objects.get_or_create(team=team, user=admin, defaults={"role": Role.OWNER})
        return team

    def _bank(self, team: Team) -> Bank:
        bank = Bank.objects.filter(team=team, slug=BANK_SLUG).first()
        if bank is None:
            bank = bank_create(
                team=team,
                name="Web agent",
                slug=BANK_SLUG,
                description="Demo bank: lessons for a web-shopping and form-filling agent.",
                # MiniLM scores a task against a short lesson lower than against a
                # similar task; 0.2 lets the demo's example queries find their lesson.
                min_similarity=0.2,
            )
            self.stdout.write(f"Created bank 'Web agent' ({bank}).")
        return bank

    def _token(self, bank: Bank, admin, path: Path) -> tuple[ApiToken, str]:
        secret = path.read_text().strip() if path.exists() else ""
        token = api_token_for_secret(raw=secret) if secret else None
        if token is not None and token.bank_id == bank.pk:
            return token, secret
        # The secret on disk is missing or belongs to another database: retire
        # the demo tokens nobody can use any more and issue a fresh one.
        for stale in ApiToken.objects.filter(bank=bank, name=TOKEN_NAME, revoked_at__isnull=True):
            api_token_revoke(token=stale)
        issued = api_token_create(bank=bank, name=TOKEN_NAME, scopes=[Scope.RETRIEVE, Scope.INGEST], created_by=admin)
        write_secret(path, issued.secret)
        self.stdout.write(f"Created demo API token {issued.token.prefix}… (secret saved to {path}, mode 600).")
        return issued.token, issued.secret

    def _trajectories(self, bank: Bank, token: ApiToken) -> None:
        if not _have_module("trajectories.services"):
            self.stderr.write("Skipped demo trajectories: trajectories.services is not there yet.")
            return
        from trajectories.services import trajectory_ingest

        created = 0
        for data in DEMO_TRAJECTORIES:
            _, is_new = trajectory_ingest(bank=bank, token=token, data=dict(data))
            created += int(is_new)
        if created:
            self.stdout.write(f"Sent {created} demo trajectories (they are judged and distilled by the worker).")

    def _items(self, bank: Bank, admin) -> None:
        if not _have_module("memories.services"):
            self.stderr.write("Skipped demo memories: memories.services is not there yet.")
            return
        from memories.models import MemoryItem
        from memories.services import memory_item_approve, memory_item_create

        existing = set(MemoryItem.objects.filter(bank=bank).values_list("title", flat=True))
        created = 0
        for spec in DEMO_ITEMS:
            if spec["title"] in existing:
                continue
            item = memory_item_create(bank=bank, author=admin, origin="manual", **spec)
            memory_item_approve(item=item, author=admin)
            created += 1
        if created:
            self.stdout.write(f"Created {created} approved demo memories (the worker embeds them).")
