"""Anomaly against the bank: how unlike a bank's approved items a new item is,
in embedding space, with a per-bank threshold calibrated so that the share of
the bank's own approved items it would flag is a setting of the trust policy."""
