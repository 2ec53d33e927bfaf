"""How a bank learns after it serves: its per-bank policy (remembered
rejections, validity, environment keys, retirement, utility ranking's
weight and shrinkage; the ranking switch itself is accounts.Bank.utility_ranking). The
per-item state (validity, environment, staleness, retirement, suspension,
replacement) lives on MemoryItem, where retrieval filters it inside the
vector search."""

import re

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from accounts.models import Bank

ENVIRONMENT_KEY_MAX = 60
ENVIRONMENT_KEYS_MAX = 10
MAX_VALID_DAYS = 3650
# The environment value an agent's version is read from when a trajectory's metadata carries it.
AGENT_VERSION_KEY = "agent_version"
ENVIRONMENT_KEY_PATTERN = re.compile(rf"^[A-Za-z0-9_.-]{{1,{ENVIRONMENT_KEY_MAX}}}$")


def _between(low, high, message):
    return [MinValueValidator(low, message=message), MaxValueValidator(high, message=message)]


def validate_environment_keys(value) -> None:
    if len(value) > ENVIRONMENT_KEYS_MAX:
        raise ValidationError(f"At most {ENVIRONMENT_KEYS_MAX} keys.")
    for key in value:
        if not ENVIRONMENT_KEY_PATTERN.match(key or ""):
            raise ValidationError(
                f"{key!r} is not a metadata key: letters, digits, '_', '.' or '-', at most {ENVIRONMENT_KEY_MAX}."
            )


class BankLearning(models.Model):
    """One bank's learning policy; a bank without a row has the defaults
    (``bank_learning`` answers an unsaved one, so reading never writes)."""

    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="learning")
    repeat_threshold = models.FloatField(
        default=0.85,
        validators=_between(0.5, 1.0, "Between 0.5 and 1."),
        help_text="Cosine similarity at or above which a newly distilled item repeats a rejected "
        "(or archived-as-wrong) item: it is recorded on that item as a repeat, never queued as new.",
    )
    rejected_examples = models.PositiveSmallIntegerField(
        default=3,
        validators=_between(0, 10, "Between 0 and 10."),
        help_text="How many of the bank's most similar rejected lessons the distiller is shown, 0–10.",
    )
    valid_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=_between(1, MAX_VALID_DAYS, f"Between 1 and {MAX_VALID_DAYS} days, or empty."),
        help_text="An approved item expires this many days after approval unless a reviewer set its "
        "validity. Empty: items do not expire by default.",
    )
    environment_keys = ArrayField(
        models.CharField(max_length=ENVIRONMENT_KEY_MAX),
        default=list,
        blank=True,
        validators=[validate_environment_keys],
        help_text="Trajectory metadata keys (e.g. site_version, model) items remember; when recent "
        "trajectories report a different value, items learnt under the old one are marked stale.",
    )
    suspend_when_hurting = models.BooleanField(
        default=False,
        help_text="Stop serving an item Impact flags as hurting until a reviewer decides.",
    )
    utility_weight = models.FloatField(
        default=0.5,
        validators=_between(0.0, 1.0, "Between 0 and 1."),
        help_text="With utility ranking: how much a utility of ±1 moves an item's score (similarity + weight × utility).",
    )
    utility_prior = models.PositiveIntegerField(
        default=20,
        validators=_between(1, 10000, "Between 1 and 10,000."),
        help_text="With utility ranking: the judged retrievals at which an item's measured effect counts half; "
        "fewer shrink it toward zero.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"learning policy of {self.bank_id}"
