"""Manage agent API tokens from the shell.

    manage.py rb_token create --bank SLUG|TEAM/SLUG --scopes retrieve,ingest [--name NAME] [--expires-days N]
    manage.py rb_token list --bank SLUG|TEAM/SLUG
    manage.py rb_token revoke PREFIX

``create`` prints only the secret on stdout (so ``TOKEN=$(manage.py rb_token create …)``
works); everything meant for a human goes to stderr."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.errors import AccountsError
from accounts.models import ApiToken, Bank, Scope
from accounts.teams.selectors import bank_find, bank_tokens
from accounts.tokens.services import api_token_create, api_token_revoke


def _find_bank(ref: str) -> Bank:
    try:
        return bank_find(ref=ref)
    except Bank.DoesNotExist:
        raise CommandError(f"No bank '{ref}'. Give its slug or TEAM/SLUG.") from None
    except Bank.MultipleObjectsReturned:
        teams = ", ".join(sorted(Bank.objects.filter(slug=ref).values_list("team__slug", flat=True)))
        raise CommandError(f"Several teams have a bank '{ref}' ({teams}): say which, as TEAM/{ref}.") from None


def _parse_scopes(raw: str) -> list[str]:
    scopes = [s.strip() for s in raw.split(",") if s.strip()]
    unknown = sorted(set(scopes) - set(Scope.values))
    if not scopes or unknown:
        raise CommandError(
            f"Bad --scopes '{raw}': use a comma-separated subset of {', '.join(Scope.values)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    return scopes


# accounts.tokens.services.api_token_create stores the secret's first 12 characters as the prefix.
PREFIX_LENGTH = 12


def _when(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


class Command(BaseCommand):
    help = "Create, list and revoke the API tokens agents use against a bank."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{create,list,revoke}")
        create = sub.add_parser("create", help="Create a token; prints only the secret on stdout.")
        create.add_argument("--bank", required=True, help="Bank slug, or TEAM/SLUG when several teams use the slug.")
        create.add_argument("--scopes", default="retrieve,ingest", help="Comma-separated: retrieve, ingest, review.")
        create.add_argument("--name", default="cli", help="A label shown in token lists.")
        create.add_argument("--expires-days", type=int, default=None, help="Expire after N days (default: never).")
        listing = sub.add_parser("list", help="List a bank's tokens.")
        listing.add_argument("--bank", required=True, help="Bank slug or TEAM/SLUG.")
        revoke = sub.add_parser("revoke", help="Revoke a token by the prefix shown in `list`.")
        revoke.add_argument("prefix", help="The token prefix (e.g. rb_AbC123xyz), or the whole token.")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _create(self, options) -> None:
        bank = _find_bank(options["bank"])
        scopes = _parse_scopes(options["scopes"])
        expires_at = None
        if options["expires_days"] is not None:
            if options["expires_days"] <= 0:
                raise CommandError("--expires-days must be a positive number of days.")
            expires_at = timezone.now() + timedelta(days=options["expires_days"])
        try:
            issued = api_token_create(bank=bank, name=options["name"], scopes=scopes, expires_at=expires_at)
        except AccountsError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(
            f"Created token {issued.token.prefix}… '{issued.token.name}' for bank {bank} "
            f"with scopes {', '.join(issued.token.scopes)}"
            + (f", expiring {_when(expires_at)} UTC" if expires_at else "")
            + ". It is shown once; store it now."
        )
        self.stdout.write(issued.secret)

    def _list(self, options) -> None:
        bank = _find_bank(options["bank"])
        tokens = bank_tokens(bank=bank)
        header = ("PREFIX", "NAME", "SCOPES", "CREATED", "LAST USED", "EXPIRES", "REVOKED")  # newest first
        rows = [
            (
                t.prefix,
                t.name,
                ",".join(t.scopes),
                _when(t.created_at),
                _when(t.last_used_at),
                _when(t.expires_at),
                _when(t.revoked_at),
            )
            for t in tokens
        ]
        if not rows:
            self.stderr.write(f"Bank {bank} has no tokens.")
            return
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            self.stdout.write("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())

    def _revoke(self, options) -> None:
        ref = options["prefix"].strip().rstrip("…").rstrip(".")
        # Accept the whole secret too: its first characters are the prefix.
        prefix = ref[:PREFIX_LENGTH]
        # Prefixes are unique across banks (a model constraint); no selector exists for this admin-only read.
        token = ApiToken.objects.select_related("bank", "bank__team").filter(prefix=prefix).first()
        if token is None:
            raise CommandError(f"No token with prefix '{ref}'. See `rb_token list --bank SLUG`.")
        if token.revoked_at is not None:
            self.stderr.write(f"Token {token.prefix}… was already revoked at {_when(token.revoked_at)} UTC.")
            return
        api_token_revoke(token=token)
        self.stderr.write(f"Revoked token {token.prefix}… '{token.name}' of bank {token.bank}.")
