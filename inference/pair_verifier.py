"""The pair verifier: a small cross-encoder that says whether two requests mean the same.

It reads both texts together, so it sees the one word that changes an answer
(order / subscription, increase / decrease, USD to EUR / EUR to USD) where two
separate sentence vectors do not. It shares its word embeddings with the
installed all-MiniLM-L6-v2 (frozen in training), so the project ships only the
transformer layers and the head.

Explainable vetoes run beside it (inference/pair_conflicts.py): different numbers,
codes, units, an odd number of negations or opposites, a swapped direction. A negation
on one side of two requests that were otherwise reworded, and one word swapped for a word
that is not a synonym, are cautions, not vetoes: the pair is served only where the verifier
is sure of it (CAUTION_MIN_SCORES).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from inference.dtypes import computing_in, resolve_dtype
from inference.pair_conflicts import REWORDED_NEGATION, SWAPPED_WORD, checked
from inference.quiet_loading import quiet_loading
from inference.weight_delta import load_delta

INFERENCE_FOLDER = Path(__file__).resolve().parent
# The shipped verifier averages the logits of two 6-layer cross-encoders trained on a GPU
# (train_verifier --device cuda; each saw 2 to 5 times the pairs of the CPU-trained
# 6-layer models they replaced). On the first two holdouts the pair served more candidates with
# fewer wrong than the three CPU-trained models did at the same thresholds
# (benchmarks/RESULTS.md, "Trained on a GPU"), for 12 layers a pair instead of 15.
SHIPPED_MODELS = (INFERENCE_FOLDER / "verifier_model_a", INFERENCE_FOLDER / "verifier_model_b")
# The second stage: a 12-layer cross-encoder on all-mpnet-base-v2 (its 6 upper layers and
# head trained, the rest MPNet's own, from the registry: inference/mpnet_base.py). It reads
# the pairs the first stage scores at SECOND_STAGE_FLOOR or more, and a pair's score is
# the lower of the two, or the second's own where it is sure (SECOND_STAGE_SURE). MPNet knows
# more of the world than MiniLM: on the unseen third and fourth holdouts the pair alone
# served 559 hits with 30 wrong at the defaults, the two stages 516 with 14
# (benchmarks/RESULTS.md, "A second stage on MPNet").
SECOND_STAGE_MODEL = INFERENCE_FOLDER / "verifier_model_mpnet"
# The second stage reads every pair the first scores at this or more, so any verify
# threshold from here up (calibration's grid starts at 0.1) sees both stages; a pair the
# first stage scores under it scores 0, so a lower threshold acts as this one and nothing
# is ever served on the first stage alone.
SECOND_STAGE_FLOOR = 0.1
# Where the second stage is at its surest, the first stage's doubt adds little: of the
# development workloads' candidate pairs (session 21, stored scores) that the second stage
# scores at 0.97 or more and the first at 0.5 or more, 1,323 are of one group and 24 are
# not; 139 of them the first stage scores under 0.97, 132 of one group. There the served
# score is the second stage's own, elsewhere the lower of the two (benchmarks/RESULTS.md,
# "A sure second stage").
SECOND_STAGE_SURE = 0.97
SURE_FIRST_STAGE_MIN = 0.5
# A pair the conflict checks caution against (a negation on one side of two reworded
# requests: inference/pair_conflicts.py) is served only where the verifier scores it this
# or more, near the top of what the two stages give (the surest such pair of the
# development workloads scored 0.986); under it, it scores 0. Chosen on the development
# workloads (session 19, `benchmarks candidates --grid`): at 0.98 every setting of a grid
# of 63 served up to 29 more hits and none more wrong (the defaults 1,011 with 18 wrong
# against 998 with 18); at 0.97, 28 of the 63 took a wrong hit more (benchmarks/RESULTS.md).
CAUTIONED_MIN_SCORE = 0.98
# One word swapped for a word WordNet does not call a synonym (pair_conflicts.SWAPPED_WORD):
# over the eight written workloads' candidate pairs the verifier scores no such near miss
# above 0.37, and at 0.95 it keeps 13 of the development workloads' 18 such rewordings it
# passes at the defaults' 0.7 (benchmarks/RESULTS.md, session 40). A swap in a request of
# more than pair_conflicts.SWAP_CAUTION_MAX_CONTENT content words is vetoed. 0.95 rather than lower, as
# swaps it never met fool it more: on held-out QQP it scores "the best gift you've ever given"
# / "... received" 0.94 and "addicted to" / "overdose on marijuana" 0.93.
SWAPPED_WORD_MIN_SCORE = 0.95
CAUTION_MIN_SCORES = {REWORDED_NEGATION: CAUTIONED_MIN_SCORE, SWAPPED_WORD: SWAPPED_WORD_MIN_SCORE}
# In bfloat16 a pair's score depends on what else its call holds: the matrix products take
# their shape from the whole batch (rows and padded length), and a review saw 206 of 600
# pairs move, by up to 0.013 (0.086 in logits), between one call and calls of 7, one of them
# across 0.7. So a pair whose score, or a stage's, lies within this many logits of a cut
# its decision turns on (the threshold it is held to, the second stage's floor, the sure
# rule's two cuts) is scored again in float32 and alone (FLOAT32_LOGIT_NOISE): what is
# served then does not depend on the rest of the partition. In logits, as the
# moves are alike there (at most 0.047 to 0.086 across the range) where in probabilities
# they shrink towards 0 and 1.
BFLOAT16_LOGIT_NOISE = 0.15
# float32 scores move too with what else their call holds, in the last bits (batches of
# other shapes: 1.3e-6 at most over 256 pairs of the fourth holdout read in two ways), so a
# pair this close to a cut is read again, as are bfloat16 ones: alone (read_alone), which is
# the one reading of a pair that no other pair can change.
FLOAT32_LOGIT_NOISE = 1e-3
WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "config.json"
RECORD_FILE = "training.json"
WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
BASE_WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
# The pair length (both texts and their separators, in word pieces) the models were trained
# at: train_verifier reads pairs cut to it.
MAX_PAIR_TOKENS = 64
# Serving reads a pair whole up to this length and does not score a longer one (it scores
# 0, UNREAD_PAIR): cut to fit, two long texts that differ only past the cut would read as
# one. Why twice the trained length (benchmarks/RESULTS.md, session 30): of held-out QQP's
# 15,707 pairs, 359 are longer than 64 (32 of its 5,700 duplicates) and 6 longer than 128
# (none); refusing the pairs over 64 cost the verifier path the recall plain cosine 0.8
# reaches, while reading them whole up to 128 gives the figures of cutting them at 64 within
# a pair (0.709 at that recall, 0.862 at the defaults); the fourth holdout gives 289 hits
# with 9 wrong all three ways.
READ_PAIR_TOKENS = 128
# Nor is a pair scored whose texts hold characters the tokenizers read only as unknown
# ([UNK]: emoji, many symbols, some Chinese characters) standing for different text: "what
# does the 👍 emoji mean" / "... 👎 ..." read as the very same word pieces, and a review saw
# them served at 0.97.
UNREAD_PAIR = (
    f"not read whole by the verifier (over {READ_PAIR_TOKENS} word pieces, or characters it "
    "reads only as unknown that differ)"
)
# Texts whose lengths a verifier remembers (a few MB at most); past it, it starts afresh.
TEXT_LENGTHS_KEPT = 100_000
# The embedding model whose tokenizer and word embeddings the verifier shares.
VERIFIER_BASE_MODEL = "all-MiniLM-L6-v2"
SCORE_BATCH = 64
# Part of every stage's identity (LearnedScoreMemory): raise it when a change to the code
# that computes a stage's learned score of a pair (this module, inference/dtypes.py,
# inference/weight_delta.py, the tokenizer call) changes that score, so kept scores are not
# read again.
LEARNED_SCORE_VERSION = 1
# The files of a model folder that decide what it computes (weights, configuration, tokenizer).
IDENTITY_FILES = (
    CONFIG_FILE,
    WEIGHTS_FILE,
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


class LearnedScoreMemory(Protocol):
    """Where a stage's learned scores of pairs are kept between look-ups
    (storage/pair_scores.py), under the stage's identity."""

    def recall(self, stage: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Each pair's kept score, NaN where none is kept."""
        ...

    def keep(self, stage: str, pairs: Sequence[tuple[str, str]], scores: np.ndarray) -> None: ...


def build_cross_encoder(base_folder: Path, num_layers: int):
    """A BERT pair classifier initialised from the first `num_layers` layers of the base model."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(base_folder, local_files_only=True)
    config.num_hidden_layers = num_layers
    config.num_labels = 1
    # float32 weights whatever the base folder stores (a half-precision copy of it must
    # not make the trained weights half precision).
    return AutoModelForSequenceClassification.from_pretrained(
        base_folder, config=config, local_files_only=True, ignore_mismatched_sizes=True, dtype=torch.float32
    )


class PairVerifier:
    """One cross-encoder, or several whose logits are averaged (all on one tokenizer),
    computed in `dtype` (inference/dtypes.py); with a `second_stage` verifier, a pair this
    one scores at SECOND_STAGE_FLOOR or more scores as two_stage_scores says, and one under it 0.

    `identity` names what this stage computes (load_verifier gives it: a digest of its
    model files and dtype); with a `memory` too, learned scores kept there are read instead
    of computed, and new ones are kept (see remembering)."""

    def __init__(
        self,
        models: list,
        tokenizer,
        dtype: str = "float32",
        second_stage: PairVerifier | None = None,
        identity: str | None = None,
        memory: LearnedScoreMemory | None = None,
        exact: PairVerifier | None = None,
        read_alone: bool = False,
    ) -> None:
        if memory is not None and identity is None:
            raise ValueError("a verifier keeps scores only under an identity (load_verifier gives one)")
        self.models = [model.eval() for model in models]
        self.tokenizer = tokenizer
        self.dtype = resolve_dtype(dtype)
        self.second_stage = second_stage
        self.identity = identity
        self.memory = memory
        # The same models in float32, each pair read alone, for pairs near a cut
        # (BFLOAT16_LOGIT_NOISE, FLOAT32_LOGIT_NOISE); None in that verifier itself.
        self.exact = exact
        # Each pair in a call of its own (no other pair's length pads it): slower (about a
        # third more in float32 here), but a pair's score then depends on the pair alone.
        self.read_alone = read_alone
        # What this stage did with the pairs it was asked about: read them with its models,
        # or found their scores kept (verifier_counts, in the assets' metadata).
        self.pairs_read = 0
        self.pairs_from_kept_scores = 0
        # text -> (word pieces, the text behind its unknown pieces, sorted) (unread)
        self._readings: dict[str, tuple[int, tuple[str, ...]]] = {}

    def remembering(self, memory: LearnedScoreMemory | None) -> PairVerifier:
        """This verifier (the same loaded models) with both stages keeping their learned
        scores in `memory`: a pair a stage has read before is not read again (None: a
        copy that keeps nothing)."""
        second = None if self.second_stage is None else self.second_stage.remembering(memory)
        exact = None if self.exact is None else self.exact.remembering(memory)
        return PairVerifier(
            self.models, self.tokenizer, self.dtype, second, self.identity, memory, exact, self.read_alone
        )

    @classmethod
    def load(
        cls, base_folder: Path, folders: tuple[Path, ...] = SHIPPED_MODELS, dtype: str = "float32"
    ) -> PairVerifier:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(base_folder, local_files_only=True)
        return cls([_load_model(base_folder, folder) for folder in folders], tokenizer, dtype)

    def logits(self, pairs: list[tuple[str, str]], max_tokens: int = MAX_PAIR_TOKENS) -> torch.Tensor:
        """Each pair's logit, the pair cut to `max_tokens` word pieces (the trained length by
        default, as training reads; serving reads READ_PAIR_TOKENS)."""
        encoded = self.tokenizer(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            padding=True,
            truncation=True,
            max_length=max_tokens,
            return_tensors="pt",
        )
        # The models lie on the CPU, except when train_verifier puts one on a GPU.
        device = next(self.models[0].parameters()).device
        encoded = encoded.to(device)
        with computing_in(self.dtype, device.type):
            logits = [model(**encoded).logits.squeeze(-1).float() for model in self.models]
        return torch.stack(logits).mean(dim=0)

    def score(
        self, pairs: list[tuple[str, str]], vetoes: bool = True, at_least: Sequence[float] | None = None
    ) -> np.ndarray:
        """Probability that each pair means the same; 0 where a conflict check vetoes it, and
        where one cautions against it and the score is under its CAUTION_MIN_SCORES
        (`vetoes=False` gives the learned score alone, checks neither vetoing nor cautioning).

        Each pair is read in a fixed order (sorted), so score(a, b) == score(b, a).
        Vetoed pairs are never given to the model (the checks cost far less), and the
        rest are batched by length so that little of each batch is padding.

        `at_least` gives the threshold each pair's score will be held to. With a second
        stage, a pair the first stage scores under both its threshold and
        SURE_FIRST_STAGE_MIN scores 0 without reading the second: no served score
        (two_stage_scores) could reach the threshold, so every decision at those
        thresholds is the same, for a fraction of the larger model's time. A pair near a
        cut its decision at that threshold turns on (BFLOAT16_LOGIT_NOISE in bfloat16,
        FLOAT32_LOGIT_NOISE in float32) is scored again in float32 and alone (`exact`), so
        the decision does not depend on the rest of the call.
        """
        scores = np.zeros(len(pairs), dtype=np.float32)
        vetoed, caution_bars = self.checks(pairs) if vetoes else (np.zeros(len(pairs), dtype=bool), None)
        caution_bars = np.zeros(len(pairs)) if caution_bars is None else caution_bars
        to_score = np.flatnonzero(~vetoed)
        if not len(to_score):
            return scores
        scores[to_score] = self._learned([tuple(sorted(pairs[i])) for i in to_score])
        first = scores.copy()
        second_scores = np.full(len(pairs), np.nan, dtype=np.float32)
        bar = np.zeros(len(pairs)) if at_least is None else np.asarray(at_least, dtype=float)
        # A cautioned pair is held to its caution's bar at least.
        bar = np.maximum(bar, caution_bars)
        floor = np.maximum(SECOND_STAGE_FLOOR, np.minimum(bar, SURE_FIRST_STAGE_MIN))
        if self.second_stage is not None:
            passed = np.flatnonzero(scores >= floor)
            scores[scores < floor] = 0.0
            if len(passed):
                second_scores[passed] = self.second_stage.score([pairs[i] for i in passed], vetoes=False)
                scores[passed] = two_stage_scores(scores[passed], second_scores[passed])
        unchecked = scores
        scores = checked_scores(scores, vetoed, caution_bars)
        if self.exact is not None and at_least is not None:
            # Before the checks: a cautioned pair just under its caution's bar is near its cut.
            near = ~vetoed & self._near_a_cut(first, second_scores, unchecked, bar, floor)
            if near.any():
                rows = np.flatnonzero(near)
                again = [pairs[i] for i in rows]
                scores[rows] = self.exact.score(again, vetoes=vetoes, at_least=[at_least[i] for i in rows])
        return scores

    def _near_a_cut(
        self, first: np.ndarray, second: np.ndarray, served: np.ndarray, bar: np.ndarray, floor: np.ndarray
    ) -> np.ndarray:
        """Pairs whose decision at `bar` could turn with a move of a stage's score by what
        else its call held (second: NaN where the second stage did not read the pair)."""
        noise = BFLOAT16_LOGIT_NOISE if self.dtype == "bfloat16" else FLOAT32_LOGIT_NOISE

        def close(scores, cut) -> np.ndarray:
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.abs(_logit(scores) - _logit(cut)) < noise

        near = close(served, bar) & (bar > 0)
        if self.second_stage is not None:
            near |= close(first, floor)
            near |= close(first, SURE_FIRST_STAGE_MIN) & (second >= SECOND_STAGE_SURE * 0.99)
            near |= close(second, SECOND_STAGE_SURE) & (first >= SURE_FIRST_STAGE_MIN * 0.9)
        return near

    def checks(self, pairs: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """Decided before any model reads the pairs: a mask of the vetoed ones (by a conflict
        check, inference/pair_conflicts.py, or longer than this verifier reads), and the score
        each pair is held to at least by its caution (0 where none)."""
        vetoed, cautions = checked(pairs)
        vetoed |= self.unread(pairs, among=~vetoed)
        return vetoed, caution_min_scores(cautions)

    def unread(self, pairs: list[tuple[str, str]], among: np.ndarray | None = None) -> np.ndarray:
        """Which pairs (of those `among` marks) this verifier's stages do not read whole, so
        that they are not scored (UNREAD_PAIR): longer than READ_PAIR_TOKENS under a stage's
        tokenizer (a pair's length is its two texts' plus the separators, so each text is
        counted once), or holding unknown pieces that stand for different text."""
        unread = np.zeros(len(pairs), dtype=bool)
        asked = np.flatnonzero(np.ones(len(pairs), dtype=bool) if among is None else among)
        for stage in [self] if self.second_stage is None else [self, self.second_stage]:
            asked = asked[~unread[asked]]  # the second stage's count only where the first reads
            if not len(asked):
                break
            readings = stage._text_readings({text for i in asked for text in pairs[i]})
            separators = stage.tokenizer.num_special_tokens_to_add(pair=True)
            for i in asked:
                (a_length, a_unknown), (b_length, b_unknown) = readings[pairs[i][0]], readings[pairs[i][1]]
                unread[i] = a_length + b_length + separators > READ_PAIR_TOKENS or a_unknown != b_unknown
        return unread

    def _text_readings(self, texts: set[str]) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Each text's word pieces under this stage's tokenizer, without special tokens, and
        the text behind its unknown pieces (remembered: a request meets several entries, and
        a day meets yesterday's texts)."""
        new = [text for text in texts if text not in self._readings]
        if new:
            if len(self._readings) + len(new) > TEXT_LENGTHS_KEPT:
                self._readings.clear()
            encoded = self.tokenizer(
                new,
                add_special_tokens=False,
                truncation=False,
                verbose=False,
                return_attention_mask=False,
                return_token_type_ids=False,
                return_offsets_mapping=True,
            )
            unknown_id = self.tokenizer.unk_token_id
            for text, ids, offsets in zip(new, encoded["input_ids"], encoded["offset_mapping"], strict=True):
                pieces = zip(ids, offsets, strict=True)
                unknown = sorted(text[start:end] for piece, (start, end) in pieces if piece == unknown_id)
                self._readings[text] = (len(ids), tuple(unknown))
        return {text: self._readings[text] for text in texts}

    def _learned(self, ordered: list[tuple[str, str]]) -> np.ndarray:
        """This stage's learned scores of ordered pairs: kept ones from the memory, the
        rest read once each (a pair asked twice is read once) and kept."""
        scores = np.full(len(ordered), np.nan, dtype=np.float32)
        if self.memory is not None:
            scores[:] = self.memory.recall(self.identity, ordered)
            self.pairs_from_kept_scores += len({ordered[i] for i in np.flatnonzero(~np.isnan(scores))})
        missing = np.flatnonzero(np.isnan(scores))
        unread = list(dict.fromkeys(ordered[i] for i in missing))
        self.pairs_read += len(unread)
        if unread:
            fresh = self._read(unread)
            if self.memory is not None:
                self.memory.keep(self.identity, unread, fresh)
            read = dict(zip(unread, fresh, strict=True))
            scores[missing] = [read[ordered[i]] for i in missing]
        return scores

    def _read(self, ordered: list[tuple[str, str]]) -> np.ndarray:
        """The models' scores of ordered pairs, batched by length so that little of each
        batch is padding (one pair a batch where read_alone)."""
        scores = np.zeros(len(ordered), dtype=np.float32)
        by_length = np.argsort([len(a) + len(b) for a, b in ordered], kind="stable")
        batch_size = 1 if self.read_alone else SCORE_BATCH
        with torch.inference_mode():
            for start in range(0, len(by_length), batch_size):
                batch = by_length[start : start + batch_size]
                logits = self.logits([ordered[i] for i in batch], max_tokens=READ_PAIR_TOKENS)
                scores[batch] = torch.sigmoid(logits).cpu().numpy()
        return scores


def verifier_counts(verifier: PairVerifier | None) -> dict[str, int]:
    """Pairs a verifier's models read and pairs whose scores were kept, over both stages
    (0 where no verifier was needed)."""
    stages = [verifier, verifier.second_stage] if verifier is not None else []
    if verifier is not None and verifier.exact is not None:
        stages += [verifier.exact, verifier.exact.second_stage]
    stages = [stage for stage in stages if stage is not None]
    return {
        "verifier_pairs_read": sum(stage.pairs_read for stage in stages),
        "verifier_pairs_from_kept_scores": sum(stage.pairs_from_kept_scores for stage in stages),
    }


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def two_stage_scores(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The served score of pairs both stages read: the second stage's own where it is at
    its surest (SECOND_STAGE_SURE) and the first stage scores SURE_FIRST_STAGE_MIN or
    more, the lower of the two elsewhere."""
    sure = (second >= SECOND_STAGE_SURE) & (first >= SURE_FIRST_STAGE_MIN)
    return np.where(sure, second, np.minimum(first, second)).astype(np.float32)


def caution_min_scores(cautions: Sequence[str | None]) -> np.ndarray:
    """The score each pair is held to by its caution kind (pair_conflicts.checked); 0 where none."""
    return np.array([0.0 if kind is None else CAUTION_MIN_SCORES[kind] for kind in cautions], dtype=float)


def checked_scores(learned: np.ndarray, vetoed: np.ndarray, caution_bars: np.ndarray) -> np.ndarray:
    """Learned scores as served after the conflict checks (PairVerifier.checks): 0 where vetoed,
    and where cautioned and under the caution's bar."""
    return np.where(vetoed | (learned < caution_bars), 0.0, learned).astype(np.float32)


def _load_model(base_folder: Path, folder: Path):
    """One cross-encoder from its folder, with the base model's (frozen, unshipped) word embeddings."""
    from safetensors import safe_open
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_config(config)
    state = {name: tensor.float() for name, tensor in load_file(folder / WEIGHTS_FILE).items()}
    with safe_open(base_folder / "model.safetensors", "pt") as base:
        state[WORD_EMBEDDINGS] = base.get_tensor(BASE_WORD_EMBEDDINGS)
    model.load_state_dict(state)
    return model


def training_record(folder: Path) -> dict:
    return json.loads((folder / RECORD_FILE).read_text())


def shipped_records() -> dict[str, dict]:
    """How each model of the shipped verifier (both stages) was trained, by folder name."""
    return {folder.name: training_record(folder) for folder in (*SHIPPED_MODELS, SECOND_STAGE_MODEL)}


def load_verifier(
    base_folder: str,
    folders: tuple[str, ...] | None = None,
    *,
    dtype: str,
    second_stage: Path | None = SECOND_STAGE_MODEL,
) -> PairVerifier:
    """The verifier made of the models in `folders` (the shipped ones by default), on the
    base model's embeddings, followed by the `second_stage` (None: the first stage alone);
    loaded once per process for the same folders and dtype."""
    if isinstance(folders, str | Path):
        raise TypeError(f"folders is a tuple of verifier folders, not one folder: pass ({str(folders)!r},)")
    chosen = tuple(str(Path(folder).resolve()) for folder in (folders or SHIPPED_MODELS))
    for folder in chosen:
        if not (Path(folder) / WEIGHTS_FILE).exists():
            raise FileNotFoundError(
                f"the pair verifier's weights are missing from {folder}: "
                "restore the shipped ones with `git checkout -- inference/verifier_model_a "
                "inference/verifier_model_b`, or train one with "
                "`python -m inference.train_verifier --out FOLDER`"
            )
    second = None if second_stage is None else str(Path(second_stage).resolve())
    return _load_verifier(str(Path(base_folder).resolve()), chosen, resolve_dtype(dtype), second)


def _load_verifier(
    base_folder: str, folders: tuple[str, ...], dtype: str, second_stage: str | None, read_alone: bool = False
) -> PairVerifier:
    # The dtype only sets how a forward pass runs, so verifiers of one folder set share weights.
    models, tokenizer, digest = _load_models(base_folder, folders)
    second = None
    if second_stage is not None:
        model, second_tokenizer, second_digest = _load_second_stage(second_stage)
        second = PairVerifier(
            [model],
            second_tokenizer,
            dtype,
            identity=stage_identity(second_digest, dtype, read_alone),
            read_alone=read_alone,
        )
    # Pairs near a cut are read again in float32, alone, whatever the dtype (PairVerifier.score).
    exact = None if read_alone else _load_verifier(base_folder, folders, "float32", second_stage, True)
    return PairVerifier(
        models,
        tokenizer,
        dtype,
        second,
        identity=stage_identity(digest, dtype, read_alone),
        exact=exact,
        read_alone=read_alone,
    )


def models_digest(folders: Sequence[str | Path]) -> str:
    """A digest of the files of model folders that decide what they compute (IDENTITY_FILES)."""
    digest = hashlib.sha256()
    for folder in folders:
        for name in IDENTITY_FILES:
            path = Path(folder) / name
            if path.is_file():
                stat = path.stat()
                digest.update(f":{name}:".encode())
                digest.update(_file_digest(str(path), stat.st_size, stat.st_mtime_ns).encode())
    return digest.hexdigest()


def stage_identity(digest: str, dtype: str, read_alone: bool = False) -> str:
    """What one stage computes, as a name: its models' digest (models_digest, taken when
    they were loaded, so a model retrained while a process runs is not named by its new
    files), the dtype it runs in, whether it reads each pair alone, the pair length it
    reads, the libraries that compute it and LEARNED_SCORE_VERSION. A retrained model,
    another base, dtype, reading or library version is another stage: a score kept from
    a batch must not stand in for a pair's score read alone."""
    import tokenizers
    import transformers

    libraries = ", ".join(
        f"{module.__name__} {module.__version__}" for module in (torch, transformers, tokenizers)
    )
    reading = f"{dtype}-alone" if read_alone else dtype
    named = hashlib.sha256(
        f"{LEARNED_SCORE_VERSION}:{reading}:{READ_PAIR_TOKENS}:{libraries}:{digest}".encode()
    )
    return f"{LEARNED_SCORE_VERSION}-{reading}-{named.hexdigest()[:32]}"


@lru_cache(maxsize=64)
def _file_digest(path: str, size: int, modified_ns: int) -> str:
    """SHA-256 of a file, once per process for the same size and modification time."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


@lru_cache(maxsize=1)
def _load_second_stage(folder: str) -> tuple[object, object, str]:
    """The second stage's model, tokenizer and models_digest (of its base and its folder)."""
    from transformers import AutoTokenizer

    from inference.mpnet_base import mpnet_folder

    if not (Path(folder) / WEIGHTS_FILE).exists():
        raise FileNotFoundError(
            f"the verifier's second stage is missing from {folder}: restore it with "
            "`git checkout -- inference/verifier_model_mpnet`"
        )
    base = mpnet_folder()
    digest = models_digest((base, folder))
    model = load_delta_model(base, Path(folder))
    return model, AutoTokenizer.from_pretrained(base, local_files_only=True), digest


@lru_cache(maxsize=2)
def _load_models(base_folder: str, folders: tuple[str, ...]) -> tuple[list, object, str]:
    """The first stage's models, tokenizer and models_digest (of the base and its folders)."""
    digest = models_digest((base_folder, *folders))
    loaded = PairVerifier.load(Path(base_folder), tuple(Path(folder) for folder in folders))
    return loaded.models, loaded.tokenizer, digest


def load_delta_model(base_folder: Path, folder: Path):
    """A cross-encoder stored as what training changed (inference/weight_delta.py), over
    the base model it was trained from: its frozen lower layers come from `base_folder`."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    # The head is "newly initialised" until the delta loads (checked below).
    with quiet_loading():
        model, loading = AutoModelForSequenceClassification.from_pretrained(
            base_folder, config=config, local_files_only=True, dtype=torch.float32, output_loading_info=True
        )
    delta = load_delta(folder / WEIGHTS_FILE)
    # What the base lacks (the head) must come from the delta, or it would score at random.
    left_at_random = sorted(set(loading["missing_keys"]) - set(delta))
    if left_at_random:
        raise ValueError(f"{folder}: neither the base nor the delta holds {', '.join(left_at_random[:5])}")
    _, unexpected = model.load_state_dict(delta, strict=False)
    if unexpected:
        raise ValueError(f"{folder}: tensors the model does not have: {', '.join(unexpected[:5])}")
    return model
