"""The tokens the pipeline's LLM calls use: per bank and day, per trajectory, and held for calls in flight."""

from django.db import models

from accounts.models import Bank
from trajectories.models import Trajectory

# The longest model name counted (longer ones are cut).
LLM_MODEL_NAME_MAX = 200


class LLMStage(models.TextChoices):
    """Why the LLM was asked: the stage its tokens are counted under."""

    JUDGE = "judge", "Judge"
    DISTILL = "distill", "Distillation"
    MATTS = "matts", "MaTTS"
    EXPERIMENT = "experiment", "Judge experiments"


class LLMUsage(models.Model):
    """The tokens a bank's LLM calls used, summed per UTC day, stage and model
    (trajectories.pipeline.llm_usage adds to it; it outlives the trajectories)."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    stage = models.CharField(max_length=20, choices=LLMStage.choices)
    model = models.CharField(max_length=LLM_MODEL_NAME_MAX)
    calls = models.BigIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "day", "stage", "model"], name="llm_usage_unique_bank_day")
        ]

    def __str__(self) -> str:
        return f"{self.stage} {self.model} on {self.day}: {self.prompt_tokens}+{self.completion_tokens} tokens"


class TrajectoryLLMUsage(models.Model):
    """The tokens the LLM calls about one trajectory used, per stage and model.
    A MaTTS contrast call is about its whole group: each member carries it whole."""

    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="llm_usage")
    stage = models.CharField(max_length=20, choices=LLMStage.choices)
    model = models.CharField(max_length=LLM_MODEL_NAME_MAX)
    calls = models.BigIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["trajectory", "stage", "model"], name="trajectory_llm_usage_unique_stage_model"
            )
        ]

    def __str__(self) -> str:
        return f"{self.stage} {self.model}: {self.prompt_tokens}+{self.completion_tokens} tokens"


class LLMBudgetHold(models.Model):
    """Tokens set aside from a bank's daily LLM budget for one call in flight (pipeline.llm_usage):
    held before the call, replaced by its real usage after it, dropped when it fails."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    tokens = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["bank", "day"])]

    def __str__(self) -> str:
        return f"{self.tokens} tokens held on {self.day}"
