"""The evaluation pages of a bank: its task sets and its evaluation runs (included by trajectories.urls)."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
