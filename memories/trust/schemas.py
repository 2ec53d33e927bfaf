"""The review API's shapes of what trust says of an item: its risk findings and its corroboration."""

from __future__ import annotations

from ninja import Field, Schema


class RiskOut(Schema):
    kind: str = Field(..., examples=["exfiltration"], description="What the risk scan found (see docs/security.md).")
    excerpt: str = Field(..., description="The exact text it was found in.")
    step: int | None = Field(None, description="The source trajectory's step it came from (null: the item's text).")
    confirmed: bool = Field(False, description="A reviewer approved the item knowing of it.")


class CorroborationOut(Schema):
    """An item's corroboration under its bank's policy (docs/security.md, "Corroboration before serving")."""

    sources: int = Field(..., examples=[1], description="Its independent sources, as the policy counts them.")
    required: int = Field(..., examples=[3], description="How many the bank requires to serve it without a human.")
    distinct: str = Field(..., examples=["runs"], description="What makes sources independent: runs, agents or tokens.")
    met: bool = Field(..., description="Whether it has enough (it also needs no risk finding).")
    human_approved: bool = Field(..., description="A reviewer or review token approved it: served without them.")
    policy_allows: bool = Field(
        ..., description="Whether the policy lets it be served (its status and the other rules still apply)."
    )
