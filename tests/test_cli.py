"""The `infercache` command line. `demo --json` and one `evaluate` run as a user runs them, a
separate process with one JSON document on stdout; the other commands run through `main` in
this process, so that the models load once for the suite and not once a command."""

import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from datetime import datetime
from pathlib import Path
from unittest import mock

import pytest

from inference.pair_conflicts import REWORDED_NEGATION
from inference.pair_verifier import UNREAD_PAIR

pytestmark = pytest.mark.slow

LONG_START = (
    "I bought a laptop from your store last week and the screen started flickering after a "
    "couple of days, and the keyboard also has a sticky key that repeats letters. I called "
    "support twice and waited on hold for an hour each time without an answer. "
) * 2
COUNTED_PATHS = ("quarantined", "exact_hits", "semantic_hits", "folded", "model_calls", "failed")


@pytest.fixture(scope="module")
def demo_twice(tmp_path_factory):
    """The first run as a separate process (the README's command), the second in this one."""
    home = tmp_path_factory.mktemp("home")
    return home, _cli_process(home, "demo"), _cli(home, "demo")


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


def _process(home: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "INFERCACHE_HOME": str(home)}
    env.pop("DAGSTER_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def _cli_process(home: Path, *args: str) -> dict:
    done = _process(home, *args, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # fails unless stdout is exactly one JSON document


def _main(home: Path, *args: str) -> tuple[int, str, str]:
    """`infercache ARGS` in this process under INFERCACHE_HOME=home: (exit status, stdout,
    stderr). The environment the command sets (INFERCACHE_HOME, DAGSTER_HOME) is put back."""
    from orchestration.cli import main

    out, err = io.StringIO(), io.StringIO()
    # The whole environment is put back: the command sets DAGSTER_HOME, which may not have
    # been set before.
    with mock.patch.dict(os.environ, {"INFERCACHE_HOME": str(home)}):
        os.environ.pop("DAGSTER_HOME", None)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as stop:  # argparse refuses its arguments so
                status = stop.code
    return status, out.getvalue(), err.getvalue()


def _cli(home: Path, *args: str) -> dict:
    status, out, err = _main(home, *args, "--json")
    assert status == 0, err[-3000:]
    return json.loads(out)  # fails unless stdout is exactly one JSON document


def _workload(folder: Path, rows: list[dict]) -> Path:
    path = folder / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_evaluate_replays_a_workload_and_prints_one_json_document(tmp_path):
    rows = [
        {"text": "How do I reset my password?", "group": "reset"},
        {"text": "How can I reset my password?", "group": "reset"},
        {"text": "How do I reset my password?", "group": "reset"},
        {"text": "What are your opening hours?", "group": "hours"},
    ]
    workload = _workload(tmp_path, rows)
    plain = _cli(tmp_path, "evaluate", "--workload", str(workload), "--no-verify", "--threshold", "0.9")
    assert plain["requests"] == 4 and plain["exact_hits"] == 1
    assert plain["semantic_hits"] == 1 and plain["precision"] == 1.0
    assert plain["settings"]["verify"] is False and plain["settings"]["threshold"] == 0.9
    assert plain["lookups_per_s"] > 0
    assert plain["candidates_vetoed_by_check"] is None
    assert plain["candidates_cautioned_by_check"] is None
    assert plain["settings"]["verifier_dtype"] is None  # no verifier ran
    assert plain["warnings"] == []


def test_evaluate_into_a_kept_store_goes_on_only_under_the_settings_it_was_replayed_under(tmp_path):
    """A second replay into --store sees the first one's entries and says how many there were;
    one under settings that index entries otherwise (the verifier off: French then has a vector)
    is refused, since the earlier entries would not be searched as its own are."""
    rows = [
        {"text": "How do I reset my password?", "group": "reset"},
        {"text": "Comment puis-je réinitialiser mon mot de passe ?", "group": "reset"},
        {"text": "What are your opening hours?", "group": "hours"},
    ]
    workload, store = _workload(tmp_path, rows), tmp_path / "kept"
    args = ("evaluate", "--workload", str(workload), "--store", str(store))
    first = _cli(tmp_path, *args)
    assert first["entries_stored_before"] == 0 and first["exact_hits"] == 0
    again = _cli(tmp_path, *args)
    assert again["entries_stored_before"] == 3 and again["exact_hits"] == 3
    status, _, said = _main(tmp_path, *args, "--no-verify", "--json")
    assert (
        status == 2
        and "holds 3 entries of namespace 'default' for tenant 'evaluation' replayed under" in said
    )
    assert "give another --store" in said and "Traceback" not in said
    assert _cli(tmp_path, *args[:3], "--store", str(tmp_path / "other"), "--no-verify")["requests"] == 3
    # A pipeline's store (the home itself) is never written into: its namespaces' entries stay.
    from storage.exact_store import open_store, write_entries
    from tests.helpers import entry_rows, identity

    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(
            con, entry_rows([identity("How do I reset my password?")], ["{}"], datetime(2026, 1, 5))
        )
    status, _, said = _main(tmp_path, *args[:3], "--store", str(tmp_path), "--json")
    assert status == 2 and "is a pipeline's (it holds 1 entries or requests of its own)" in said
    with open_store(tmp_path / "cache.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cache_entries").fetchall() == [(1,)]


def test_evaluate_gives_exact_matching_only_where_the_pipeline_would(tmp_path):
    """Keying switches semantic reuse off for text the models do not cover; the replay
    applies the same rule and says which requests it touched and why."""
    rows = [
        {"text": "How do I reset my password?", "group": "reset"},
        {"text": "我怎么重置密码？", "group": "reset"},
        {"text": "Comment puis-je réinitialiser mon mot de passe ?", "group": "reset"},
        {"text": "How can I reset my password?", "group": "reset"},
    ]
    report = _cli(tmp_path, "evaluate", "--workload", str(_workload(tmp_path, rows)), "--no-verify")
    assert report["semantic_skipped"] == 2
    skipped = {example["request"]: example["reason"] for example in report["semantic_skipped_examples"]}
    assert "Cjk script" in skipped[rows[1]["text"]]
    assert "reads as fr" in skipped[rows[2]["text"]]
    # Both still count as misses of a group that had an entry; the paraphrase is served.
    assert report["recall_denominator"] == 3 and report["right_semantic_hits"] == 1


def test_evaluate_skips_by_the_models_its_settings_name(tmp_path):
    """A multilingual embedding model covers Chinese and French, but the verifier reads
    English only: verified, both get exact matching only; unverified, neither does."""
    rows = [
        {"text": "我怎么重置密码？", "group": "reset"},
        {"text": "Comment puis-je réinitialiser mon mot de passe ?", "group": "reset"},
    ]
    args = ("evaluate", "--workload", str(_workload(tmp_path, rows)), "--model", "multilingual-e5-small")
    verified = _cli(tmp_path, *args)
    assert verified["semantic_skipped"] == 2
    assert all("the pair verifier covers en" in e["reason"] for e in verified["semantic_skipped_examples"])
    assert _cli(tmp_path, *args, "--no-verify")["semantic_skipped"] == 0
    # Read by a person: one line a skipped request, a long one shortened. As a separate
    # process that loads both models and verifies a pair: what a person sees on stdout,
    # and nothing else there (no loading bar or library notice among the report's lines).
    long_text = "The payment service returned errors this morning. " * 40
    rows = [
        {"text": "How do I reset my password?", "group": "reset"},
        {"text": "How can I reset my password?", "group": "reset"},
        {"text": long_text, "group": "long"},
    ]
    done = _process(tmp_path, "evaluate", "--workload", str(_workload(tmp_path, rows)))
    assert done.returncode == 0, done.stderr[-3000:]
    shown = done.stdout
    report_line = re.compile(r"^ *[a-z_0-9.]+  .*$|^exact only: .*$")
    assert [line for line in shown.splitlines() if not report_line.match(line)] == []
    assert "'verify': True" in shown and re.search(r"^ +semantic_hits  1$", shown, re.M)
    (line,) = [line for line in shown.splitlines() if line.startswith("exact only: ")]
    assert "longer than all-MiniLM-L6-v2 reads (256 word pieces)" in line and len(line) < 250
    assert "semantic_skipped  1" in shown


def test_evaluate_warns_in_its_json_too_of_a_namespace_without_settings(tmp_path):
    """A script that reads only stdout must see it as well as a person reading stderr."""
    workload = _workload(tmp_path, [{"text": "How do I reset my password?", "group": "reset"}])
    args = ("evaluate", "--workload", str(workload), "--no-verify", "--namespace", "demo-faq-answrs")
    report = _cli(tmp_path, *args)
    assert len(report["warnings"]) == 1
    assert "'demo-faq-answrs' has no settings of its own" in report["warnings"][0]
    assert "the defaults apply" in report["warnings"][0]
    assert _cli(tmp_path, *args[:-1], "demo-faq-answers")["warnings"] == []


def test_evaluate_with_the_verifier_says_which_checks_vetoed(tmp_path):
    rows = [
        {"text": "How do I increase my credit limit?", "group": "up"},
        {"text": "How do I decrease my credit limit?", "group": "down"},
        {"text": "How can I get my credit limit decreased?", "group": "down"},
        # A negation in reworded requests: cautioned, and the verifier is not sure enough.
        {"text": "How do I turn on Wi-Fi calling on my iPhone?", "group": "enable"},
        {"text": "iphone wifi calling enabled but doesn't work", "group": "broken"},
        # Two long messages that differ only past what the verifier reads: not scored.
        {"text": LONG_START + "Can I get my money back?", "group": "refund"},
        {"text": LONG_START + "Can you send someone to repair it at home?", "group": "repair"},
    ]
    workload = _workload(tmp_path, rows)
    verified = _cli(tmp_path, "evaluate", "--workload", str(workload), "--threshold", "0.5")
    assert verified["settings"]["verify"] is True
    # models.yaml says auto for both: what ran is what this CPU resolves auto to.
    from inference.dtypes import resolve_dtype

    ran = verified["settings"]
    assert ran["verifier_dtype"] == ran["embedding_dtype"] == resolve_dtype("auto")
    assert verified["wrong_hits"] == 0
    assert verified["candidates_vetoed_by_check"]["opposites"] >= 2  # row 2 and row 3 against row 1
    assert verified["candidates_cautioned_by_check"] == {REWORDED_NEGATION: 1}
    assert verified["candidates_vetoed_by_check"][UNREAD_PAIR] == 1


def test_evaluate_lists_wrong_hits_when_asked(tmp_path):
    rows = [
        {"text": "How do I increase my credit limit?", "group": "up"},
        {"text": "How do I decrease my credit limit?", "group": "down"},
    ]
    workload = _workload(tmp_path, rows)
    args = ("evaluate", "--workload", str(workload), "--no-verify", "--threshold", "0.5")
    assert "wrong_hit_examples" not in _cli(tmp_path, *args)
    shown = _cli(tmp_path, *args, "--show-wrong", "5")
    assert shown["wrong_hits"] == 1
    (example,) = shown["wrong_hit_examples"]
    assert example["request"] == rows[1]["text"] and example["served"] == rows[0]["text"]
    assert (example["request_group"], example["served_group"]) == ("down", "up")
    assert 0.5 <= example["cosine"] <= 1.0 and example["verifier_score"] is None  # none ran


def test_a_listed_wrong_hit_carries_the_verifiers_score_of_its_pair(tmp_path):
    # A stand-in verifier (it passes everything with 0.75) so that a wrong hit is served
    # with verification on and its score is known.
    import numpy as np

    from orchestration.evaluation import effective_namespace, evaluate
    from storage.config import load_settings

    scored = []

    def passes_everything(pairs, at_least=None):
        scored.extend(pairs)
        return np.full(len(pairs), 0.75, dtype=np.float32)

    rows = [
        {"text": "How do I increase my credit limit?", "group": "up"},
        {"text": "How do I decrease my credit limit?", "group": "down"},
    ]
    settings = load_settings(home=tmp_path)
    namespace = effective_namespace(settings, "default", None, threshold=0.5, verify_threshold=0.7)
    report = evaluate(
        settings, _workload(tmp_path, rows), namespace, None, verify=passes_everything, show_wrong=3
    )
    (example,) = report["wrong_hit_examples"]
    assert example["verifier_score"] == 0.75
    assert scored[-1] == (rows[1]["text"], rows[0]["text"])  # scored on (request, served)


def test_evaluate_refuses_a_negative_count_of_wrong_hits(capsys):
    from orchestration.cli import main

    with pytest.raises(SystemExit):
        main(["evaluate", "--workload", "w.jsonl", "--show-wrong", "-1"])
    assert "expected a whole number of 0 or more, not '-1'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "--workload", "w.jsonl", "--show-wrong", "²"])
    assert "expected a whole number of 0 or more, not '²'" in capsys.readouterr().err


def _rewordings_and_strangers() -> list[dict]:
    """30 pairs of rewordings and 30 of unrelated questions."""
    rows = [
        {
            "a": f"How do I reset password number {i}?",
            "b": f"How can I reset password number {i}?",
            "duplicate": True,
        }
        for i in range(30)
    ]
    return rows + [
        {"a": f"What is the fee for plan {i}?", "b": f"How do I open account {i}?", "duplicate": False}
        for i in range(30)
    ]


def test_calibrate_writes_the_namespace_settings_and_reuses_embeddings(tmp_path):
    pairs = tmp_path / "p.jsonl"
    rows = _rewordings_and_strangers()
    # Text the embedding model does not read is never served semantically: a miss at every setting.
    # (Two wordings that differ by a question mark: plain cosine would serve them at any threshold.)
    rows.append({"a": "我怎么重置密码？", "b": "我怎么重置密码?", "duplicate": True})
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = (
        "calibrate",
        "--pairs",
        str(pairs),
        "--tenant",
        "acme",
        "--namespace",
        "faq",
        "--max-wrong-rate",
        "0.05",
    )
    first = _cli(tmp_path, *args)
    assert first["pairs"] == 61 and first["embedded_now"] == 122
    assert first["texts_exact_only"] == {"verified": 2, "plain_cosine": 2}
    assert first["chosen"] is not None and first["chosen"]["precision"] >= 0.95
    assert max(point["recall"] for point in first["curve_plain_cosine"]) <= 30 / 31
    written = Path(first["written_to"])
    assert written.is_relative_to(tmp_path)
    from storage.config import load_settings

    tuned = load_settings(home=tmp_path).namespace("faq", "acme").semantic
    assert tuned.threshold == first["chosen"]["threshold"]
    # Only that tenant's namespace changed: another tenant keeps the tracked defaults.
    assert load_settings(home=tmp_path).namespace("faq", "globex") == load_settings().namespace(
        "faq", "globex"
    )
    # "faq" had no settings of its own until this calibration wrote them.
    assert first["warnings"] == [
        "namespace 'faq' has no settings of its own (tenant 'acme'); calibration starts it from the defaults"
    ]
    second = _cli(tmp_path, *args)
    assert second["embedded_now"] == 0 and second["warnings"] == []
    # Too few pairs to tell a setting's wrong-hit rate from zero: refused, and the earlier
    # calibration stands (it is not switched off for want of data).
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps(r) + "\n" for r in rows[:5] + rows[30:35]))
    status, _, said = _main(tmp_path, *args[:2], str(few), *args[3:])
    assert status == 2 and "settings were left as they were" in said
    assert "Traceback" not in said
    assert load_settings(home=tmp_path).namespace("faq", "acme").semantic == tuned


def test_calibrate_leaves_semantic_reuse_off_where_the_settings_keep_it_off(tmp_path):
    """demo-contracts keeps semantic reuse off (legal wording): calibrating it is refused
    before any file is read unless --enable-semantic says to turn it on. A namespace a
    calibration turned off (no setting met the target) is calibrated again without it."""
    from storage.config import NO_SETTING_MET, load_settings, write_namespace_override

    pairs = tmp_path / "p.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in _rewordings_and_strangers()))
    args = ["calibrate", "--pairs", str(pairs), "--tenant", "acme", "--max-wrong-rate", "0.05"]
    status, _, said = _main(tmp_path, *args, "--namespace", "demo-contracts", "--json")
    assert status == 2 and "semantic reuse is off in namespace 'demo-contracts' for tenant 'acme'" in said
    assert "give --enable-semantic" in said and "Traceback" not in said
    assert not load_settings(home=tmp_path).namespace("demo-contracts", "acme").semantic.enabled
    turned_on = _cli(tmp_path, *args, "--namespace", "demo-contracts", "--enable-semantic")
    assert (
        turned_on["semantic_enabled"]
        and load_settings(home=tmp_path).namespace("demo-contracts", "acme").semantic.enabled
    )
    write_namespace_override(
        tmp_path,
        "faq",
        {"semantic": {"enabled": False}, "calibration": {"result": NO_SETTING_MET}},
        tenant="acme",
    )
    again = _cli(tmp_path, *args, "--namespace", "faq")
    assert (
        again["semantic_enabled"] and load_settings(home=tmp_path).namespace("faq", "acme").semantic.enabled
    )


def test_calibrate_from_a_workload_replays_it_and_writes_what_it_chose(tmp_path):
    asks = [f"How do I reset the password of account number {i}?" for i in range(30)]
    rewordings = [f"How can I reset the password for account number {i}?" for i in range(30)]
    rows = [{"text": t, "group": f"g{i}"} for i, t in enumerate(asks)]
    rows += [{"text": t, "group": f"g{i}"} for i, t in enumerate(rewordings)]
    # Text the embedding model does not read is replayed as evaluate replays it: exact only.
    rows += [{"text": "我怎么重置账户密码？", "group": "g0"}, {"text": "我怎么重置账户密码?", "group": "g0"}]
    workload = _workload(tmp_path, rows)
    args = ("calibrate", "--workload", str(workload), "--tenant", "acme", "--namespace", "faq")
    first = _cli(tmp_path, *args, "--max-wrong-rate", "0.05")
    assert first["read_as"] == "workload replay" and first["requests"] == 62 and first["groups"] == 30
    assert first["embedded_now"] == 62
    assert first["texts_exact_only"] == {"verified": 2, "plain_cosine": 2}
    # Its counts are evaluate's: the second Chinese wording (cosine 0.93 to the first) is
    # served by neither.
    (at_090,) = [p for p in first["curve_plain_cosine"] if p["threshold"] == 0.9]
    evaluated = _cli(tmp_path, "evaluate", "--workload", str(workload), "--no-verify", "--threshold", "0.9")
    assert evaluated["semantic_skipped"] == 2
    assert (at_090["served"], at_090["right"]) == (
        evaluated["semantic_hits"],
        evaluated["right_semantic_hits"],
    )
    chosen = first["chosen"]
    assert chosen is not None and chosen["precision"] >= 0.95 and chosen["served"] >= 20
    from storage.config import load_settings

    tuned = load_settings(home=tmp_path).namespace("faq", "acme").semantic
    # What it chose is written: plain cosine (no verify threshold) is a choice like another.
    assert tuned.threshold == chosen["threshold"]
    assert tuned.verify == (chosen["verify_threshold"] is not None)
    if tuned.verify:
        assert tuned.verify_threshold == chosen["verify_threshold"]
    else:  # plain cosine leaves the verifier's threshold as it was, not 0.0
        assert tuned.verify_threshold == load_settings().namespace("faq", "acme").semantic.verify_threshold
    second = _cli(tmp_path, *args, "--max-wrong-rate", "0.05")
    assert second["embedded_now"] == 0 and second["chosen"] == chosen


def test_calibrate_reads_pairs_or_a_workload_not_both(tmp_path):
    status, _, said = _main(
        tmp_path,
        "calibrate",
        "--pairs",
        "p.jsonl",
        "--workload",
        "w.jsonl",
        "--tenant",
        "acme",
        "--namespace",
        "faq",
    )
    assert status == 2 and "not allowed with argument" in said


def test_evaluate_refuses_what_cannot_work_before_a_model_loads(tmp_path, monkeypatch, capsys):
    """Said as what is wrong and what to do, exit status 2, no traceback (in-process: each
    is refused before any model is loaded)."""
    from orchestration.cli import main

    home = tmp_path / "home"
    monkeypatch.setenv("INFERCACHE_HOME", str(home))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    workload = _workload(tmp_path, [{"text": "How do I reset my password?", "group": "reset"}])
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    evaluate = ["evaluate", "--workload", str(workload)]

    assert main([*evaluate, "--store", str(a_file)]) == 2
    assert f"--store {a_file} is a file: give a folder" in capsys.readouterr().err
    assert main([*evaluate, "--no-verify", "--verify-threshold", "0.9"]) == 2
    assert "--verify-threshold does nothing with --no-verify" in capsys.readouterr().err
    (home / "config").mkdir(parents=True)
    (home / "config" / "namespaces.yaml").write_text("tenants: [1, 2\n")
    assert main(evaluate) == 2
    assert "namespaces.yaml is not valid YAML" in capsys.readouterr().err
    monkeypatch.setenv("INFERCACHE_HOME", str(a_file))
    assert main(evaluate) == 2
    assert f"INFERCACHE_HOME {a_file} is a file: point it at a folder" in capsys.readouterr().err


def test_calibrate_never_writes_into_the_tracked_configuration(tmp_path, monkeypatch, capsys):
    """A home at the repository root would put the override file on the tracked one: refused
    before any model loads, the tracked file as it was."""
    from orchestration.cli import main
    from storage.config import DEFAULT_CONFIG_DIR

    tracked = DEFAULT_CONFIG_DIR / "namespaces.yaml"
    before = tracked.read_text()
    monkeypatch.setenv("INFERCACHE_HOME", str(DEFAULT_CONFIG_DIR.parent))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    pairs = tmp_path / "p.jsonl"
    pairs.write_text(
        json.dumps({"a": "How do I reset it?", "b": "How can I reset it?", "duplicate": True}) + "\n"
    )
    calibrate = ["calibrate", "--pairs", str(pairs), "--tenant", "acme", "--namespace", "faq"]
    assert main([*calibrate, "--max-wrong-rate", "0.01"]) == 2
    assert "refusing to write tuned settings into the tracked configuration" in capsys.readouterr().err
    assert tracked.read_text() == before


def test_the_instance_runs_one_run_at_a_time_and_an_older_default_is_brought_up_to_date(tmp_path):
    """In the store pool alone, two runs of a backfill go step by step in turns (a review): the
    instance the commands make queues whole runs one at a time. A dagster.yaml this command
    wrote before is replaced; one a user edited is left as it is."""
    import dagster as dg

    from orchestration.cli import _INSTANCE_CONFIG_BEFORE, INSTANCE_CONFIG, _prepare_environment

    def prepared(home: Path) -> Path:
        with mock.patch.dict(os.environ, {"INFERCACHE_HOME": str(home)}):
            os.environ.pop("DAGSTER_HOME", None)
            _prepare_environment()
        return home / "dagster" / "dagster.yaml"

    fresh = prepared(tmp_path / "fresh")
    assert fresh.read_text() == INSTANCE_CONFIG
    with mock.patch.dict(os.environ, {"DAGSTER_HOME": str(fresh.parent)}):
        with dg.DagsterInstance.get() as instance:
            assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1
    older = tmp_path / "older" / "dagster" / "dagster.yaml"
    older.parent.mkdir(parents=True)
    older.write_text(_INSTANCE_CONFIG_BEFORE)
    assert prepared(tmp_path / "older").read_text() == INSTANCE_CONFIG
    edited = tmp_path / "edited" / "dagster" / "dagster.yaml"
    edited.parent.mkdir(parents=True)
    edited.write_text("telemetry:\n  enabled: false\n")
    assert prepared(tmp_path / "edited").read_text() == "telemetry:\n  enabled: false\n"


def test_the_recompute_command_names_the_instance_its_steps_take_turns_in(monkeypatch):
    """Without DAGSTER_HOME the printed `dagster` command ran under no pool, beside the runs."""
    from orchestration.review import recompute_command

    monkeypatch.setenv("DAGSTER_HOME", "/srv/my infercache/dagster")
    command = recompute_command("2026-01-02", "/srv/my infercache")
    # The store too: run from another folder, the command recomputed that folder's (empty)
    # store, and the instance counted the partition as recomputed (a review).
    assert command.startswith(
        "INFERCACHE_HOME='/srv/my infercache' DAGSTER_HOME='/srv/my infercache/dagster' "
        "dagster asset materialize "
    )
    assert command.endswith("--partition 2026-01-02")


def test_a_command_kept_from_the_cache_file_says_so_in_one_line(tmp_path, monkeypatch):
    """report-wrong beside a step that held the file ended in DuckDB's traceback (a review)."""
    import storage.exact_store as exact_store
    from storage.exact_store import open_store
    from tests.helpers import hold_the_file

    with open_store(tmp_path / "cache.duckdb"):
        pass
    monkeypatch.setattr(exact_store, "LOCK_WAIT_SECONDS", 0.3)
    holder = hold_the_file(tmp_path / "cache.duckdb", 10)
    try:
        status, _, err = _main(tmp_path, "report-wrong", "--partition", "2026-01-02", "--request-id", "r1")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert status == 2
    assert err.startswith("infercache report-wrong: the cache file ") and "Traceback" not in err
    assert "run this again when it has finished" in err
