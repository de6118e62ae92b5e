"""Dagster definitions, resources, schedules, checks and the `infercache` CLI."""
