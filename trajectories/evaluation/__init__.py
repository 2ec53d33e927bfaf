"""Evaluation runs: a bank's fixed task sets, and runs that compare arms (a candidate release,
production, no memory, a same-budget control) on them, k tries per task, before a release
reaches agents."""
