"""`evaluate`'s replay: block processing must give the counts of a one-by-one replay."""

import zlib

import numpy as np
import pytest

from storage.config import load_settings
from storage.replay import ReplayStores, replay_workload
from storage.semantic_index import SemanticIndex

pytestmark = pytest.mark.slow

WORKLOAD = [
    {"text": "How do I reset my password?", "group": "reset"},
    {"text": "How can I reset my password?", "group": "reset"},
    {"text": "How do I reset my password?", "group": "reset"},
    {"text": "How do I cancel my order?", "group": "cancel-order"},
    {"text": "How do I cancel my subscription?", "group": "cancel-subscription"},
    {"text": "How can I cancel my order?", "group": "cancel-order"},
    {"text": "What are your opening hours?", "group": "hours"},
    {"text": "When are you open?", "group": "hours"},
    {"text": "How do I cancel my subscription?", "group": "cancel-subscription"},
    {"text": "how can i reset my password", "group": "reset"},
]


def _replay(
    tmp_path, minilm, block_size, verify=None, threshold=0.8, wrong_hits=None, rows=WORKLOAD, store="b"
):
    settings = load_settings(home=tmp_path)
    namespace = settings.namespace("default")
    namespace = type(namespace)(
        **{
            **vars(namespace),
            "semantic": type(namespace.semantic)(
                **{**vars(namespace.semantic), "threshold": threshold, "verify": verify is not None}
            ),
        }
    )
    folder = tmp_path / f"{store}{block_size}"
    stores = ReplayStores(folder / "c.duckdb", folder / "lance")
    return replay_workload(
        rows,
        namespace,
        stores,
        minilm,
        minilm.dimension,
        verify,
        block_size=block_size,
        wrong_hits=wrong_hits,
    )


def _replay_into(folder, rows, namespace, embedding, block_size, verify=None, **options):
    """A replay (embedding: any model with a dimension) into a store of its own under `folder`."""
    return replay_workload(
        rows,
        namespace,
        ReplayStores(folder / "c.duckdb", folder / "lance"),
        embedding,
        embedding.dimension,
        verify,
        block_size=block_size,
        **options,
    )


def _counts(report):
    keep = ("exact_hits", "semantic_hits", "right_semantic_hits", "wrong_hits", "recall_denominator")
    return {k: report[k] for k in keep}


def test_blocks_give_the_counts_of_a_one_by_one_replay(tmp_path, minilm):
    one_by_one = _replay(tmp_path, minilm, block_size=1)
    assert one_by_one["exact_hits"] == 2  # rows 3 and 9 repeat earlier texts exactly
    assert one_by_one["requests"] == len(WORKLOAD)
    for block_size in (3, 256):
        assert _counts(_replay(tmp_path, minilm, block_size)) == _counts(one_by_one)


def test_a_verifier_that_refuses_everything_leaves_only_exact_hits(tmp_path, minilm):
    def refuse(pairs, at_least=None):
        return np.zeros(len(pairs), dtype=np.float32)

    for block_size in (1, 256):
        report = _replay(tmp_path, minilm, block_size, verify=refuse)
        assert report["semantic_hits"] == 0 and report["precision"] is None
        assert report["exact_hits"] == 2


def test_low_threshold_without_verification_serves_wrong_answers(tmp_path, minilm):
    report = _replay(tmp_path, minilm, 256, threshold=0.7)
    # "cancel my subscription" (cosine 0.71 to "cancel my order") is served the order answer.
    assert report["wrong_hits"] >= 1
    assert report["precision"] < 1.0
    assert report["wrong_per_1000"] == pytest.approx(1000 * report["wrong_hits"] / len(WORKLOAD))


def test_wrong_hits_are_listed_with_what_answered_them(tmp_path, minilm):
    listed = {}
    for block_size in (1, 256):
        wrong_hits = []
        report = _replay(tmp_path, minilm, block_size, threshold=0.7, wrong_hits=wrong_hits)
        assert len(wrong_hits) == report["wrong_hits"] >= 1
        for hit in wrong_hits:
            assert hit.request_group != hit.served_group and 0.7 <= hit.cosine <= 1.0
        listed[block_size] = [(hit.request, hit.served) for hit in wrong_hits]
    # "How do I cancel my subscription?" comes twice: both are counted, so both are listed.
    assert listed[256].count(("How do I cancel my subscription?", "How do I cancel my order?")) == 2
    # A block replays as one row at a time would: the same wrong answers, in the same order.
    assert listed[1] == listed[256]


def test_a_replay_into_a_kept_store_counts_the_groups_stored_before_it(tmp_path, minilm):
    """evaluate --store: a second workload replayed on top of a first one counts as the two
    replayed in one go, so recall's denominator includes groups the first one stored."""
    first, second = WORKLOAD[:5], WORKLOAD[5:]
    whole = _replay(tmp_path, minilm, 256, threshold=0.7, store="whole")
    before = _replay(tmp_path, minilm, 256, threshold=0.7, rows=first, store="kept")
    after = _replay(tmp_path, minilm, 256, threshold=0.7, rows=second, store="kept")
    for count in ("exact_hits", "semantic_hits", "right_semantic_hits", "recall_denominator"):
        assert before[count] + after[count] == whole[count], count
    # every row of the second part after its first one is of a group the first part stored
    assert after["recall_denominator"] >= 3 and after["recall"] <= 1.0


def test_requests_the_pipeline_gives_exact_matching_only_get_it_in_a_replay_too(tmp_path, minilm):
    """evaluate replays the pipeline's look-up path: text the embedding model does not read
    (another script, past its 256 word pieces) is matched exactly only, as keying does, so
    a replay cannot count a semantic hit the pipeline would never make."""
    from storage.semantic_coverage import semantic_skip_reasons

    report = "The payment service returned errors to some customers this morning. " * 30
    rows = [
        {"text": report + "Summarise it for the support team.", "group": "support"},
        # The same beginning, another ending: all-MiniLM-L6-v2 gives both one vector.
        {"text": report + "Write the apology to customers.", "group": "apology"},
        {"text": "我怎么重置密码？", "group": "reset-zh"},
        {"text": "我怎么重置密码？", "group": "reset-zh"},
        {"text": "How do I reset my password?", "group": "reset"},
        {"text": "How can I reset my password?", "group": "reset"},
    ]
    settings = load_settings(home=tmp_path)
    namespace = settings.namespace("default")

    def pipeline_skips(texts):
        return semantic_skip_reasons(texts, [namespace] * len(texts), settings)

    def replay(block_size, skips, store):
        # Cosine alone (no verifier): the long pair would be served (cosine 1.0).
        return _replay_into(
            tmp_path / f"{store}{block_size}", rows, namespace, minilm, block_size, skip_reasons=skips
        )

    unguarded = replay(256, None, "unguarded")
    assert unguarded["wrong_hits"] == 1 and unguarded["semantic_skipped"] == 0
    for block_size in (1, 256):
        guarded = replay(block_size, pipeline_skips, "guarded")
        assert guarded["wrong_hits"] == 0
        assert guarded["semantic_hits"] == guarded["right_semantic_hits"] == 1  # the English paraphrase
        assert guarded["exact_hits"] == 1  # the repeated Chinese request still hits exactly
        assert guarded["semantic_skipped"] == 3  # two long texts, the first Chinese one
        reasons = [skipped["reason"] for skipped in guarded["semantic_skipped_examples"]]
        assert reasons[0].startswith("longer than all-MiniLM-L6-v2 reads (256 word pieces)")
        assert "Cjk script" in reasons[2] and "exact matching only" in reasons[2]
        assert guarded["recall_denominator"] == 1  # only the paraphrase followed its group's entry
        # Their entries are kept for exact hits, but not searched semantically: only the
        # English request's vector is in the index.
        folder = tmp_path / f"guarded{block_size}"
        assert (
            SemanticIndex(folder / "lance", namespace.semantic.embedding_model, minilm.dimension).count() == 1
        )


class _ClusteredEmbedding:
    """Texts "g{group}-v{variant}" as unit vectors near their group's centre, groups in
    near-miss pairs: a constructed embedding, so that a workload has many neighbours above
    the threshold and the candidates a row is offered decide its count."""

    dimension = 16

    def __init__(self, seed: int):
        self.seed = seed
        rng = np.random.default_rng(seed)
        pair_centres = rng.normal(size=(20, self.dimension))
        # Group 2k and 2k+1 lie close together (a near miss); their variants closer still.
        self.centres = np.repeat(pair_centres, 2, axis=0) + 0.35 * rng.normal(size=(40, self.dimension))

    def __call__(self, texts):
        vectors = []
        for text in texts:
            group, variant = (int(part[1:]) for part in text.split("-"))
            noise = np.random.default_rng([self.seed, group, variant]).normal(size=self.dimension)
            vector = self.centres[group] + 0.3 * noise
            vectors.append(vector / np.linalg.norm(vector))
        return np.asarray(vectors, dtype=np.float32)


def _pair_verifier(seed: int):
    """Scores a pair from its texts alone (the same pair always scores the same): pairs of
    one group mostly pass, pairs of a near-miss group sometimes do."""

    def verify(pairs, at_least=None):
        scores = []
        for a, b in pairs:
            same = a.split("-")[0] == b.split("-")[0]
            draw = np.random.default_rng(
                [seed, *sorted((zlib.crc32(a.encode()), zlib.crc32(b.encode())))]
            ).random()
            scores.append(draw if same else draw * 0.6)
        return np.asarray(scores, dtype=np.float32)

    return verify


@pytest.mark.parametrize("seed", [1, 2])
def test_any_block_size_counts_what_a_one_by_one_replay_counts(tmp_path, seed):
    """Repeated texts (their first copy served, then an entry nearer to them inserted) and
    rows with more neighbours above the threshold than a look-up is offered: a block must
    offer each row what the store would hold when its turn came, and no more."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 40, size=300)
    variants = rng.integers(0, 6, size=300)
    rows = [{"text": f"g{g}-v{v}", "group": str(g)} for g, v in zip(groups, variants, strict=True)]
    embedding = _ClusteredEmbedding(seed)
    settings = load_settings(home=tmp_path)
    namespace = settings.namespace("default")
    reports = {}
    for verified in (False, True):
        semantic = type(namespace.semantic)(
            **{**vars(namespace.semantic), "threshold": 0.75, "verify": verified, "verify_threshold": 0.4}
        )
        scoped = type(namespace)(**{**vars(namespace), "semantic": semantic})
        for block_size in (1, 7, 256):
            wrong_hits = []
            verify = _pair_verifier(seed) if verified else None
            folder = tmp_path / f"{verified}-{block_size}"
            report = _replay_into(folder, rows, scoped, embedding, block_size, verify, wrong_hits=wrong_hits)
            reports[verified, block_size] = (_counts(report), [(w.request, w.served) for w in wrong_hits])
        assert reports[verified, 7] == reports[verified, 1]
        assert reports[verified, 256] == reports[verified, 1]
    # The workload exercises what it is for: semantic hits, wrong ones, exact repeats.
    counts = reports[True, 1][0]
    assert counts["semantic_hits"] > 50 and counts["wrong_hits"] > 5 and counts["exact_hits"] > 20


class _TwoAxes:
    """A* texts on one axis, B* on another, any other text between them: a text between is
    exactly as similar to an A as to a B, a tie the look-up breaks by key."""

    dimension = 8

    def __call__(self, texts):
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            if text[0] in "AB":
                vectors[row, "AB".index(text[0])] = 1.0
            else:
                vectors[row, :2] = np.float32(1 / np.sqrt(2))
        return vectors


def _plain_cosine(tmp_path, threshold):
    namespace = load_settings(home=tmp_path).namespace("default")
    semantic = type(namespace.semantic)(
        **{**vars(namespace.semantic), "threshold": threshold, "verify": False}
    )
    return type(namespace)(**{**vars(namespace), "semantic": semantic})


def test_a_tie_in_similarity_is_broken_as_the_one_by_one_look_up_breaks_it(tmp_path):
    namespace = _plain_cosine(tmp_path, 0.7)
    served = set()
    for n in range(6):
        rows = [{"text": f"A{n}", "group": "a"}, {"text": f"B{n}", "group": "b"}, {"text": "C", "group": "b"}]
        by_block = {}
        for block_size in (1, 3):
            wrong_hits = []
            report = _replay_into(
                tmp_path / f"{n}-{block_size}", rows, namespace, _TwoAxes(), block_size, wrong_hits=wrong_hits
            )
            by_block[block_size] = (_counts(report), [(w.request, w.served) for w in wrong_hits])
        assert by_block[3] == by_block[1]
        served.add(by_block[1][0]["wrong_hits"])
    assert served == {0, 1}  # the keys decide which of the two serves, both ways among six


def test_one_request_typed_two_ways_is_decided_once_whatever_the_block(tmp_path):
    """NFC and NFD "résumé" are one key; read as typed, a combining accent split the letters
    and the two wordings got different decisions, so a block (which resolves the second as
    a copy of the first) and a one-by-one replay counted otherwise."""
    import unicodedata

    from storage.semantic_coverage import semantic_skip_reasons

    settings = load_settings(home=tmp_path)
    namespace = _plain_cosine(tmp_path, 0.8)
    text = "résumé template"
    rows = [
        {"text": "resume template", "group": "g"},
        {"text": unicodedata.normalize("NFD", text), "group": "g"},
        {"text": unicodedata.normalize("NFC", text), "group": "g"},
    ]
    assert len(set(semantic_skip_reasons([r["text"] for r in rows[1:]], [namespace] * 2, settings))) == 1
    counts = {}
    for block_size in (1, 256):
        report = _replay_into(
            tmp_path / f"b{block_size}",
            rows,
            namespace,
            _TwoAxes(),
            block_size,
            skip_reasons=lambda texts: semantic_skip_reasons(texts, [namespace] * len(texts), settings),
        )
        counts[block_size] = {**_counts(report), "semantic_skipped": report["semantic_skipped"]}
    assert counts[256] == counts[1]


def test_a_pair_gets_one_similarity_in_any_batch():
    """The block's rows against each other (look-alikes, calibrate's replay), a scope's
    candidates re-scored (the index), one pair alone: the same value to the last bit, so a
    similarity at a threshold passes or fails wherever the replay's blocks fall (float32
    products of other shapes differed in the last bit for most pairs)."""
    from storage.scope_search import cosines, rescored

    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(300, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    block = cosines(vectors[:200], vectors)
    columns = np.tile(np.arange(300), (200, 1))
    assert np.array_equal(rescored(vectors[:200], vectors, columns), block)
    for i, j in [(0, 1), (7, 250), (199, 0), (123, 124)]:
        assert cosines(vectors[[i]], vectors[[j]])[0, 0] == block[i, j]
    assert np.array_equal(cosines(vectors[100:200], vectors[:150]), block[100:200, :150])


def test_a_pair_at_the_threshold_is_served_wherever_the_blocks_fall(tmp_path, minilm):
    """A review's case: the threshold exactly at a pair's similarity, the pair within one block
    of 256 rows or across two (255 other requests between), replayed in blocks of 256 and 1."""
    from storage.scope_search import cosines

    first = {"text": "Where is the check number on a check?", "group": "x"}
    second = {"text": "check number location on check", "group": "x"}
    filler = {"text": "best pizza dough recipe", "group": "pizza"}
    vectors = minilm([first["text"], second["text"]])
    threshold = float(cosines(vectors[:1], vectors[1:])[0, 0])
    served = set()
    for layout, rows in (
        ("in", [first, second] + [filler] * 255),
        ("across", [first] + [filler] * 255 + [second]),
    ):
        for block_size in (256, 1):
            report = _replay(tmp_path, minilm, block_size, threshold=threshold, rows=rows, store=layout)
            served.add((report["semantic_hits"], report["right_semantic_hits"]))
    assert served == {(1, 1)}


def test_with_a_floor_the_similarities_that_reach_it_are_the_same_to_the_last_bit():
    """Look-alikes and calibrate's replay sum again in float64 only what could reach their
    threshold: those values are the ones every other product gives."""
    from storage.scope_search import cosines

    rng = np.random.default_rng(12)
    vectors = rng.normal(size=(400, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact, floored = cosines(vectors[:100], vectors), cosines(vectors[:100], vectors, floor=0.2)
    reached = exact >= 0.2
    assert 100 < reached.sum() < reached.size // 2
    assert np.array_equal(floored[reached], exact[reached])
    assert np.allclose(floored, exact, atol=1e-5)
