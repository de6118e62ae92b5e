"""`python -m benchmarks languages`: the language rule measured on the project's own texts."""

import json

import pytest

from benchmarks.languages import main

pytestmark = pytest.mark.slow


def test_the_rule_switches_no_english_workload_text_off_and_catches_short_foreign_requests(capsys):
    assert main(["--qqp", "0", "--json"]) == 0  # the workloads and written families only
    report = json.loads(capsys.readouterr().out)
    shipped, before = report["rules"]["shipped"], report["rules"]["shipped_from_four_words"]
    assert report["english_texts"] > 20000 and report["english_texts_under_four_words"] > 500
    # Every English text the rule switches off is switched off by its script (it quotes
    # Chinese, Japanese or Hindi), never by a misread detection.
    assert shipped["english_under_four_words_switched_off"] == 0
    assert shipped["english_switched_off"] == before["english_switched_off"]
    assert before["foreign_short_caught"] == {"tuning": 0, "holdout": 0}
    assert (
        shipped["foreign_short_caught"]["tuning"] >= 30 and shipped["foreign_short_caught"]["holdout"] >= 20
    )
    assert sum(shipped["foreign_caught"].values()) >= sum(before["foreign_caught"].values())
