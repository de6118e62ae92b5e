"""The model side: backends, batching, device-time accounting. No Dagster."""
