"""Recording what agents send and what reviewers decide about it: ingest (one
trajectory or a batch), judgments and relabels, retention and deletion."""
