"""Celery adapters for the learning pipeline: take ids, re-fetch, call one
service. (The judge/distill pipeline is built by the pipeline issue.)"""
