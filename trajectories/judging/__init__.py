"""Judging the judge: a bank's own prompt versions (``prompt_versions``),
reviewers' decisions as few-shot examples (``few_shot``), experiments that
compare two judges on held-out human-labelled cases (``experiments``), and
the datasets exported from the judgments (``datasets``: the judge evaluation
set and chat fine-tuning rows). Imports nothing, so the pipeline's modules
import the parts they need without a cycle."""
