import dataclasses
import json

import pytest

from storage.keys import (
    InvalidParams,
    RequestIdentity,
    cache_key,
    canonical_params,
    canonical_request,
    semantic_scope,
)

BASE = RequestIdentity(
    tenant="acme",
    namespace="faq",
    model="tiny-llm",
    model_version="1",
    params={"temperature": 0.0, "max_new_tokens": 24},
    prefix="You are helpful.\n",
    input="How do I reset my password?",
)


def key_of(identity: RequestIdentity) -> bytes:
    return cache_key(canonical_request(identity))


def test_key_is_sha256_sized_and_stable():
    assert len(key_of(BASE)) == 32
    assert key_of(BASE) == key_of(RequestIdentity(**vars(BASE)))


def test_same_meaning_gives_the_same_key():
    reordered = RequestIdentity(**{**vars(BASE), "params": {"max_new_tokens": 24, "temperature": 0}})
    assert key_of(reordered) == key_of(BASE)
    float_count = RequestIdentity(**{**vars(BASE), "params": {"max_new_tokens": 24.0, "temperature": 0.0}})
    assert key_of(float_count) == key_of(BASE)
    # "é" typed as e + combining accent is the same text as the precomposed character.
    composed = RequestIdentity(**{**vars(BASE), "input": "caf\u00e9"})
    decomposed = RequestIdentity(**{**vars(BASE), "input": "cafe\u0301"})
    assert key_of(composed) == key_of(decomposed)


@pytest.mark.parametrize(
    "field,value",
    [
        ("tenant", "globex"),
        ("namespace", "faq-2"),
        ("model", "other-llm"),
        ("model_version", "2"),
        ("params", {"temperature": 0.7, "max_new_tokens": 24}),
        ("params", {"temperature": 0.0, "max_new_tokens": 25}),
        ("params", {"temperature": 0.0, "max_new_tokens": 24, "prompt_template": "v2"}),
        ("prefix", "You are terse.\n"),
        ("input", "How do I reset my password"),
    ],
)
def test_any_change_of_any_field_changes_the_key(field, value):
    changed = RequestIdentity(**{**vars(BASE), field: value})
    assert key_of(changed) != key_of(BASE)


def test_fields_cannot_bleed_into_each_other():
    # Moving text between prefix and input must not produce the same canonical form.
    a = RequestIdentity(**{**vars(BASE), "prefix": "ab", "input": "c"})
    b = RequestIdentity(**{**vars(BASE), "prefix": "a", "input": "bc"})
    assert key_of(a) != key_of(b)


def test_canonical_request_is_an_ordered_array():
    decoded = json.loads(canonical_request(BASE))
    assert decoded[1:5] == ["acme", "faq", "tiny-llm", "1"]
    assert decoded[-1] == BASE.input


def test_booleans_are_not_numbers():
    assert canonical_params({"x": True}) != canonical_params({"x": 1})


@pytest.mark.parametrize("bad", [{"t": float("nan")}, {"t": float("inf")}, [1, 2], "text"])
def test_params_without_canonical_form_are_rejected(bad):
    with pytest.raises(InvalidParams):
        canonical_params(bad)


def test_semantic_scope_ignores_only_the_input():
    other_input = RequestIdentity(**{**vars(BASE), "input": "something else"})
    assert semantic_scope(other_input, "m") == semantic_scope(BASE, "m")
    assert semantic_scope(BASE, "m") != semantic_scope(BASE, "other-embedder")
    other_tenant = RequestIdentity(**{**vars(BASE), "tenant": "globex"})
    assert semantic_scope(other_tenant, "m") != semantic_scope(BASE, "m")


TRICKY_INPUTS = [
    "What is the refund policy?",
    "",
    "ends with a comma,",
    'a comma before a quote: ,"',
    'ends with a quote"',
    "a backslash at the end \\",
    'a backslash before a quote \\"',
    '","],["',
    "中文, \u2028 and a tab\t",
]


@pytest.mark.parametrize("text", TRICKY_INPUTS)
def test_a_stored_entry_gives_the_scope_of_the_request_that_wrote_it(text):
    """An entry indexed after it was written is searched under its requests' scope, whatever
    its input holds (the context is read from the canonical JSON up to the input)."""
    from storage.keys import semantic_scopes_of_stored

    asked = RequestIdentity(
        tenant="acme",
        namespace="faq",
        model="m",
        model_version="2",
        params={"temperature": 0.0, "stop": ["\n", '",'], "nested": {"b": 1, "a": 2.5}},
        prefix='Cafe\u0301: ,"',
        input=text,
    )
    other = dataclasses.replace(asked, tenant="globex")
    stored = [canonical_request(asked), canonical_request(other), canonical_request(asked)]
    for model, language in (("all-MiniLM-L6-v2", None), ("e5", None), ("e5", "fr")):
        expected = [semantic_scope(x, model, language) for x in (asked, other, asked)]
        assert semantic_scopes_of_stored(stored, model, [language] * 3) == expected
