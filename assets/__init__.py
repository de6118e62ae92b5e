"""Dagster assets: thin functions over storage/ and inference/ for one daily partition."""
