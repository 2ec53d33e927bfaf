"""Typed readers of environment variables, for settings.py (healthchecks' style)."""

import os


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def envfloat(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default
