"""Where the embedded defaults live under one home folder (INFERCACHE_HOME)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StoreLocations:
    home: Path

    @property
    def duckdb_path(self) -> Path:
        return self.home / "cache.duckdb"

    @property
    def lance_folder(self) -> Path:
        return self.home / "lance"

    @property
    def landing_root(self) -> Path:
        return self.home / "landing"

    @property
    def exports_folder(self) -> Path:
        return self.home / "exports"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    def answers_export(self, partition: str) -> Path:
        return self.exports_folder / "answers" / f"partition={partition}" / "answers.parquet"
