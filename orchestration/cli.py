"""The `infercache` command line."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from inference.pair_data import LabelledFileError
from orchestration.resources import InferCacheResource, default_home
from storage.config import ConfigError
from storage.exact_store import StoreBusyError

# evaluate's namespace where none is named: the defaults of config/namespaces.yaml.
DEFAULT_NAMESPACE = "default"


# One writer of the DuckDB file at a time (the store pool), also for runs launched from the
# UI; and one run at a time, in the order they were queued, so a backfill's days run whole
# one after another: in the pool alone two runs go step by step in turns, and the later day
# then asks the model what the earlier day was about to store (a review).
INSTANCE_CONFIG = (
    "concurrency:\n  pools:\n    default_limit: 1\n  runs:\n    max_concurrent_runs: 1\n"
    "telemetry:\n  enabled: false\n"
)
# What this command wrote before (replaced by the above; a file someone edited is left alone).
_INSTANCE_CONFIG_BEFORE = "concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n"


def _prepare_environment() -> Path:
    """Resolve INFERCACHE_HOME and DAGSTER_HOME (under it by default) before Dagster starts."""
    home = Path(default_home())
    if home.exists() and not home.is_dir():
        raise ConfigError(f"INFERCACHE_HOME {home} is a file: point it at a folder (made if missing)")
    os.environ["INFERCACHE_HOME"] = str(home)
    dagster_home = Path(os.environ.get("DAGSTER_HOME") or home / "dagster").resolve()
    try:
        dagster_home.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"cannot make DAGSTER_HOME {dagster_home} ({error.strerror}): point INFERCACHE_HOME "
            "(or DAGSTER_HOME) at a folder that can be written"
        ) from None
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    instance_config = dagster_home / "dagster.yaml"
    if not instance_config.exists() or instance_config.read_text() == _INSTANCE_CONFIG_BEFORE:
        instance_config.write_text(INSTANCE_CONFIG)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return home


def _demo(args: argparse.Namespace) -> int:
    import dagster as dg

    from orchestration.demo import format_table, run_demo

    home = _prepare_environment()
    with dg.DagsterInstance.get() as instance:
        reports = run_demo(InferCacheResource(home=str(home)), instance)
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        print(format_table(reports))
        print(f"\nStores under {home}; open the runs with `make ui`.")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from orchestration.evaluation import effective_namespace, evaluate
    from storage.config import load_settings
    from storage.semantic_coverage import cross_language_reuse

    home = _prepare_environment()
    settings = load_settings(home=home)
    warnings = _say_if_unconfigured(settings, args.namespace, args.tenant, "the defaults apply")
    namespace = effective_namespace(
        settings,
        args.namespace,
        args.tenant,
        threshold=args.threshold,
        verify=False if args.no_verify else None,
        verify_threshold=args.verify_threshold,
        embedding_model=args.model,
    )
    if across := cross_language_reuse(namespace, settings):
        print(f"infercache: {across}", file=sys.stderr)
        warnings.append(across)
    report = evaluate(
        settings, args.workload, namespace, args.store, tenant=args.tenant, show_wrong=args.show_wrong
    )
    report["warnings"] = warnings
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            if key in ("wrong_hit_examples", "semantic_skipped_examples", "warnings"):
                # The examples follow, one a line; the warnings are on stderr already.
                continue
            print(f"{key:>22}  {value}")
        for skipped in report["semantic_skipped_examples"]:
            print(f"exact only: {_shortened(skipped['request'])!r}: {skipped['reason']}")
        for hit in report.get("wrong_hit_examples", []):
            score = "" if hit["verifier_score"] is None else f", verifier {hit['verifier_score']}"
            print(
                f"wrong: {hit['request']!r} ({hit['request_group']}) served {hit['served']!r} "
                f"({hit['served_group']}), cosine {hit['cosine']}{score}"
            )
    return 0


def _shortened(text: str, most: int = 80) -> str:
    """A request as a line can show it: a long one is the reason it was skipped."""
    return text if len(text) <= most else f"{text[: most - 1]}…"


def _calibrate(args: argparse.Namespace) -> int:
    from orchestration.evaluation import CalibrationSource, calibrate
    from storage.config import load_settings
    from storage.locations import StoreLocations

    home = _prepare_environment()
    settings = load_settings(home=home)
    warnings = _say_if_unconfigured(
        settings, args.namespace, args.tenant, "calibration starts it from the defaults"
    )
    report = calibrate(
        settings,
        home,
        CalibrationSource(pairs=args.pairs, workload=args.workload),
        args.tenant,
        args.namespace,
        args.max_wrong_rate,
        args.limit,
        StoreLocations(home).lance_folder,
        enable_semantic=args.enable_semantic,
    )
    report["warnings"] = warnings
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        chosen = report["chosen"]
        if "pairs" in report:
            read = f"{report['pairs']} pairs ({report['duplicates']} duplicates)"
        else:
            read = f"{report['requests']} requests in {report['groups']} groups, replayed at each setting"
        exact_only = report["texts_exact_only"]
        print(
            f"{read}, {report['embedded_now']} texts embedded now; texts given exact matching "
            f"only: {exact_only['verified']} where verified, {exact_only['plain_cosine']} at plain cosine"
        )
        print(f"{'threshold':>9} {'verify':>6} {'served':>7} {'precision':>9} {'recall':>7}")
        for point in report["curve_chosen"]:
            print(
                f"{point['threshold']:>9.2f} {point['verify_threshold'] or 'off':>6} {point['served']:>7} "
                f"{_fmt(point['precision']):>9} {_fmt(point['recall']):>7}"
            )
        if chosen is None:
            print(
                f"no setting met the target (a wrong-hit rate of {args.max_wrong_rate} or less over "
                f"{report['minimum_served']} or more served): semantic reuse switched off for this namespace"
            )
        else:
            verified = (
                "plain cosine, verifier off for this namespace"
                if chosen["verify_threshold"] is None
                else f"verify {chosen['verify_threshold']}"
            )
            print(
                f"chose threshold {chosen['threshold']}, {verified}: {chosen['right']} right of "
                f"{chosen['served']} served, precision {_fmt(chosen['precision'])} "
                f"recall {_fmt(chosen['recall'])}"
            )
        print(f"written to {report['written_to']}")
    return 0


def _report_wrong(args: argparse.Namespace) -> int:
    from orchestration.review import recompute_command
    from storage.exact_store import open_store
    from storage.wrong_answers import report_summary, report_wrong_answer, withdraw_reports

    home = _prepare_environment()
    resource = InferCacheResource(home=str(home))
    rerun = recompute_command(args.partition, str(home))
    with open_store(resource.locations.duckdb_path) as con:
        try:
            if args.withdraw:
                withdrawn = withdraw_reports(con, args.partition, args.request_id, resource.now())
                print(f"withdrew {withdrawn} report(s) on request {args.request_id!r} of {args.partition}")
                return 0
            report = report_wrong_answer(con, args.partition, args.request_id, args.note, resource.now())
        except ValueError as error:
            print(f"infercache report-wrong: {error}", file=sys.stderr)
            return 2
    if args.json:
        shown = {
            **report,
            "served_key": report["served_key"].hex(),
            "request_key": report["request_key"].hex(),
            "recompute_with": rerun,
        }
        print(json.dumps(shown, indent=2, default=str))
    else:
        print(report_summary(report))
        print(f"recompute the partition's answers with: {rerun} (or materialize it in the UI)")
    return 0


def _say_if_unconfigured(settings, namespace: str, tenant: str, consequence: str) -> list[str]:
    """A namespace named nowhere in the settings is most often a typo: say so on stderr,
    and return what was said, for the JSON report's "warnings" (a script reading only
    stdout sees it too)."""
    if namespace == DEFAULT_NAMESPACE:
        return []
    if namespace in settings.namespace_overrides or namespace in settings.tenant_overrides.get(tenant, {}):
        return []
    warning = f"namespace {namespace!r} has no settings of its own (tenant {tenant!r}); {consequence}"
    print(f"infercache: {warning}", file=sys.stderr)
    return [warning]


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ui(args: argparse.Namespace) -> int:
    _prepare_environment()
    # Started from make, dagster dev would ignore Ctrl-C; restore the default handler.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    command = [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-m",
        "orchestration.definitions",
        "-h",
        args.host,
        "-p",
        str(args.port),
    ]
    os.execv(sys.executable, command)


def _count(text: str) -> int:
    """A command-line count: a whole number, 0 or more."""
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of 0 or more, not {text!r}")
    return count


def _wrong_rate(text: str) -> float:
    """--max-wrong-rate: a fraction strictly between 0 and 1."""
    try:
        rate = float(text)
    except ValueError:
        rate = float("nan")
    if not 0.0 < rate < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1 (e.g. 0.01), not {text!r}")
    from storage.calibration import SMALLEST_WRONG_RATE, minimum_served

    if rate < SMALLEST_WRONG_RATE:
        raise argparse.ArgumentTypeError(
            f"expected {SMALLEST_WRONG_RATE:g} or more (e.g. 0.01), not {text!r}: a rate that small "
            f"would need over {minimum_served(SMALLEST_WRONG_RATE):,} served hits to tell from zero"
        )
    return rate


def _positive(text: str) -> int:
    """--limit: a whole number, 1 or more."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, not {text!r}")
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="infercache", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write the sample workload, run 3 days, print the report")
    demo.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    demo.set_defaults(handler=_demo)
    evaluate = commands.add_parser(
        "evaluate", help="replay a labelled workload through the look-up path and measure it"
    )
    evaluate.add_argument("--workload", type=Path, required=True, help='JSONL rows {"text", "group"}')
    evaluate.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="whose settings apply")
    evaluate.add_argument(
        "--tenant",
        default="evaluation",
        help="whose settings apply with --namespace: the tenant you calibrated for measures its settings",
    )
    evaluate.add_argument(
        "--store",
        type=Path,
        default=None,
        help="a folder to keep the stores in; a later replay into it sees what earlier ones stored",
    )
    evaluate.add_argument("--threshold", type=float, default=None, help="cosine threshold")
    evaluate.add_argument(
        "--verify-threshold", type=float, default=None, help="the verifier's score needed to serve (0 to 1)"
    )
    evaluate.add_argument("--no-verify", action="store_true", help="plain cosine, no pair verifier")
    evaluate.add_argument("--model", default=None, help="embedding model (from models.yaml)")
    evaluate.add_argument(
        "--show-wrong",
        type=_count,
        default=0,
        metavar="N",
        help="list up to N wrong hits (request, the entry that answered it, cosine, verifier score)",
    )
    evaluate.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    evaluate.set_defaults(handler=_evaluate)
    calibrate = commands.add_parser(
        "calibrate", help="choose a namespace's semantic thresholds from labelled pairs or a workload"
    )
    source = calibrate.add_mutually_exclusive_group(required=True)
    source.add_argument("--pairs", type=Path, help='JSONL rows {"a", "b", "duplicate"}')
    source.add_argument(
        "--workload", type=Path, help='JSONL rows {"text", "group"}, replayed in order at each setting'
    )
    calibrate.add_argument("--tenant", required=True)
    calibrate.add_argument("--namespace", required=True)
    calibrate.add_argument(
        "--max-wrong-rate", type=_wrong_rate, default=0.01, help="wrong hits / semantic hits allowed"
    )
    calibrate.add_argument("--limit", type=_positive, default=None, help="use the first K pairs or rows")
    calibrate.add_argument(
        "--enable-semantic",
        action="store_true",
        help="calibrate a namespace whose settings keep semantic reuse off (a chosen setting turns it on)",
    )
    calibrate.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    calibrate.set_defaults(handler=_calibrate)
    report = commands.add_parser(
        "report-wrong",
        help="report a semantic or folded answer as wrong: its entry stops answering requests like it",
    )
    report.add_argument("--partition", required=True, help="the day the request ran, e.g. 2026-01-02")
    report.add_argument("--request-id", required=True, help="as in request_outcomes.request_id")
    report.add_argument("--note", default=None, help="why it was wrong, kept with the report")
    report.add_argument(
        "--withdraw",
        action="store_true",
        help="take back the reports on this request (made by mistake, or an audit you overrule)",
    )
    report.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    report.set_defaults(handler=_report_wrong)
    ui = commands.add_parser("ui", help="start the Dagster UI over the same stores")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(handler=_ui)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ConfigError, LabelledFileError, StoreBusyError) as error:
        # Bad input (or a cache file another process kept), said as what was wrong and what
        # to do; a traceback would bury it.
        print(f"infercache {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
