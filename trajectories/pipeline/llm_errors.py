"""The errors the LLM client (trajectories.pipeline.llm) raises, in a module of their own so the
budget (llm_usage), which the client imports, can raise them too."""


class LLMError(Exception):
    """Base of the errors ``chat`` raises; ``str()`` is fit to show a human."""


class LLMTransientError(LLMError):
    """Worth retrying later: timeout, rate limit, 5xx, connection refused.
    ``retry_after`` is the server's Retry-After hint in seconds, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class LLMPermanentError(LLMError):
    """Retrying will not help: bad credentials, unknown model, a 4xx request error."""


class LLMNotConfigured(LLMPermanentError):
    """No endpoint is configured (``RB_LLM_BASE_URL`` / ``OPENAI_API_KEY`` unset)."""


class LLMBudgetSpent(LLMPermanentError):
    """The bank's daily LLM token budget cannot cover this call (today's usage and the calls in flight
    deducted): it was not sent. The pipeline parks its rows until the budget resets or is raised."""

    def __init__(self, *, left: int, needed: int):
        super().__init__(
            f"This bank's daily LLM token budget is spent: {max(left, 0):,} tokens left today, "
            f"about {needed:,} needed for this call."
        )
        self.left, self.needed = left, needed
