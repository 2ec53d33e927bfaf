"""What the tests of the account pages share: their URLs."""

from django.urls import reverse


def team_url(team, name: str = "team") -> str:
    return reverse(f"accounts:{name}", kwargs={"team_id": team.public_id})


def bank_url(bank, name: str) -> str:
    return reverse(f"accounts:{name}", kwargs={"bank_id": bank.public_id})
