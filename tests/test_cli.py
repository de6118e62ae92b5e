"""`infercache demo --json` as a user runs it: a separate process, one JSON document on stdout."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

COUNTED_PATHS = ("quarantined", "exact_hits", "semantic_hits", "folded", "model_calls", "failed")


def _demo(home: Path) -> list[dict]:
    env = {**os.environ, "INFERCACHE_HOME": str(home)}
    env.pop("DAGSTER_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", "demo", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # fails unless stdout is exactly one JSON document


@pytest.fixture(scope="module")
def demo_twice(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    return home, _demo(home), _demo(home)


def test_demo_json_reports_three_days_served_from_day_one(demo_twice):
    home, reports, _ = demo_twice
    assert [r["partition"] for r in reports] == ["2026-01-05", "2026-01-06", "2026-01-07"]
    for report in reports:
        assert report["requests"] == sum(report[p] for p in COUNTED_PATHS)
        assert report["device_seconds_used"] >= 0 and report["device_seconds_saved"] >= 0
    assert reports[0]["exact_hits"] == 0
    for later in reports[1:]:
        assert later["exact_hits"] > 0 and later["semantic_hits"] > 0
    # DAGSTER_HOME defaults to a folder under INFERCACHE_HOME, where the UI finds the runs.
    assert (home / "dagster" / "dagster.yaml").exists()
    assert (home / "dagster" / "storage").is_dir()


def test_demo_is_reproducible_when_run_again(demo_twice):
    _, first, second = demo_twice
    keep = ("partition",) + COUNTED_PATHS
    assert [{k: r[k] for k in keep} for r in first] == [{k: r[k] for k in keep} for r in second]
