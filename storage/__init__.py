"""The cache engine: keys, stores, settings. Usable from any Python code, no Dagster."""
