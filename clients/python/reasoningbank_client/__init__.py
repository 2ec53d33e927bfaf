"""Python client of the ReasoningBank service.

``endpoints`` holds every method of the API once, as a sans-IO operation
(``operations``), on top of ``base`` (request paths and bodies, answers,
retries); ``client`` owns ``Client``, which performs them blocking, and
``async_client`` ``AsyncClient``, which awaits them; ``run`` the
``client.run(...)`` context managers;
``types`` the answers as dataclasses; ``errors`` the exceptions; ``retry``
the retry policy; ``adapters`` the conversion of agent-framework traces
(OpenAI Agents SDK, LangChain) into messages the service reads; ``compat``
a drop-in for the ``reasoning-bank`` library; ``mcp`` the MCP server
(``pip install 'reasoningbank-client[mcp]'``); ``eval_endpoints`` and
``eval_types`` the evaluation runs, ``harness`` ``client.evaluate(...)``, and
``cli`` / ``command_agent`` the ``rb eval`` command."""

__version__ = "0.1.0"

from reasoningbank_client.client import AsyncClient, Client, trajectory_body
from reasoningbank_client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    ConnectionError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionError,
    RateLimitError,
    RBError,
    ServerError,
    ValidationError,
    WaitTimeoutError,
)
from reasoningbank_client.eval_types import (
    Evaluation,
    EvaluationArm,
    EvaluationProgress,
    EvaluationSummary,
    EvaluationTry,
    NextTry,
    TaskSet,
    TryRecorded,
    TryReport,
)
from reasoningbank_client.harness import AgentError
from reasoningbank_client.retry import NO_RETRY, RetryPolicy
from reasoningbank_client.run import AsyncRun, Run
from reasoningbank_client.types import (
    SETTLED_STATUSES,
    BatchItemResult,
    BatchResult,
    DerivedItem,
    Impact,
    ImpactArm,
    Judgment,
    MemoryItem,
    MemoryPage,
    NearDuplicate,
    Recorded,
    Retrieval,
    ReviewItem,
    ReviewPage,
    TokenInfo,
    Trajectory,
)

__all__ = [
    "NO_RETRY",
    "SETTLED_STATUSES",
    "APIError",
    "AgentError",
    "AsyncClient",
    "AsyncRun",
    "AuthenticationError",
    "BadRequestError",
    "BatchItemResult",
    "BatchResult",
    "Client",
    "ConfigurationError",
    "ConflictError",
    "ConnectionError",
    "DerivedItem",
    "Evaluation",
    "EvaluationArm",
    "EvaluationProgress",
    "EvaluationSummary",
    "EvaluationTry",
    "Impact",
    "ImpactArm",
    "Judgment",
    "MemoryItem",
    "MemoryPage",
    "NearDuplicate",
    "NextTry",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionError",
    "RBError",
    "RateLimitError",
    "Recorded",
    "Retrieval",
    "RetryPolicy",
    "ReviewItem",
    "ReviewPage",
    "Run",
    "ServerError",
    "TaskSet",
    "TokenInfo",
    "Trajectory",
    "TryRecorded",
    "TryReport",
    "ValidationError",
    "WaitTimeoutError",
    "trajectory_body",
]
