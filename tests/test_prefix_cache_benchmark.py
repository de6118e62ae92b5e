"""`python -m benchmarks prefix_cache` at a toy size: it runs both ways and compares answers."""

import json

from benchmarks.prefix_cache import SYSTEM_PROMPT, main


def test_the_benchmark_reports_both_ways_and_the_same_answers(capsys):
    args = ["--calls", "4", "--rounds", "1", "--layers", "1", "--hidden", "64", "--prompt-repeats", "1"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["same_answers"] is True
    assert report["prefix_tokens"] == len(SYSTEM_PROMPT + "Question: ")  # a byte a token, all ASCII
    assert report["prefix_cache_seconds_median"] > 0 and report["left_padded_seconds_median"] > 0
    assert report["speedup"] == report["left_padded_seconds_median"] / report["prefix_cache_seconds_median"]
