"""What a request asks to do and what it asks to undo, for the undoing veto of pair_conflicts.

"My Equifax report is frozen, how do I thaw it" names the freeze yet asks the reverse of
"freeze my credit"; a count of opposites misses it, since the freeze stands on both sides.
The tables in inference/lexicon.py list undoable actions and the words that undo them; a
request that undoes an action the other asks to do, and does not do itself, needs another
answer.

Only a word that reads as a request counts, as an action or as its undoing: not negated
("without deleting"), not stopped ("stop following", "keeps freezing"), not a condition or a
past ("after muting them", "if I lock the keys inside"), not a noun or a state ("a freeze",
"the lock", "it's freezing"). A participle never asks for the action: "deleted emails" names
a state, and "retrieve deleted emails" undoes the deletion.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from inference.lexicon import IRREGULAR_STATES, NEGATIONS, UNDOING, UNDOING_NAMED

ANY_ACTION = "*"  # "put it back" undoes whatever the other request does

# Within two words before an action, these stop or reverse it: "stop following",
# "keep chrome from blocking", "keeps freezing", "undo blocking".
_STOPPING = frozenset(
    "stop stops stopped stopping quit prevent prevents avoid keep keeps kept from undo reverse".split()
)
_REVERSING = frozenset({"undo", "reverse"})
# Within three words before an action, these make it a condition or a past event.
_CONDITIONS = frozenset({"after", "since", "once", "when", "whenever", "if", "before"})
# Right before a word, these make it a noun or a state: "a freeze", "the lock", "is freezing"
# ("it's" splits into "it" and "s").
_DETERMINERS = "a an the my your his her its our their this that these those"
_NOT_A_REQUEST_AFTER = frozenset(f"{_DETERMINERS} of on in with s is are was were be been".split())
_SWITCHING = frozenset({"turn", "turns", "turning", "switch", "switches", "switching"})
_TURNED_BACK_ON = _SWITCHING | {"turned", "switched"}
_PUT_BACK = frozenset({"put", "puts", "putting"})
_BACK_REACH = 5  # "put the photos I archived back"
_OFF_REACH = 3  # "turn autocorrect off"
_OBJECT_REACH = 3  # "lift a credit freeze"


def _doing_forms(word: str) -> set[str]:
    """The base and -ing forms: "hide", "hiding"; "mute", "muting"; "pin", "pinning"."""
    stem = word[:-1] if word.endswith("e") and not word.endswith("ee") else word
    forms = {word, stem + "ing"}
    if len(word) >= 3 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
        forms.add(word + word[-1] + "ing")
    return forms


def _state_forms(word: str) -> set[str]:
    """Forms that name an action without asking for it: "deleted", "cancelled", "frozen"."""
    forms = {word + "d" if word.endswith("e") else word + "ed", word + word[-1] + "ed"}
    return forms | set(IRREGULAR_STATES.get(word, ()))


@dataclass(frozen=True)
class _Forms:
    """The lexicon's tables by word form."""

    doing: dict[str, str]  # "hiding" -> "hide"
    undoing: dict[str, frozenset[str]]  # "unhide" -> {"hide"}
    undoing_where_named: dict[str, frozenset[str]]  # "restore" -> {"delete", "deactivate", ...}
    naming: dict[str, str]  # "hidden", "hide", "hiding" -> "hide"


@lru_cache(maxsize=1)
def _forms() -> _Forms:
    doing: dict[str, str] = {}
    naming: dict[str, str] = {}
    for action in UNDOING:
        for form in _doing_forms(action):
            doing.setdefault(form, action)
            naming.setdefault(form, action)
        for form in _state_forms(action):
            naming.setdefault(form, action)

    def by_form(table: dict[str, tuple[str, ...]]) -> dict[str, frozenset[str]]:
        found: dict[str, set[str]] = {}
        for action, words in table.items():
            for word in words:
                for form in _doing_forms(word):
                    found.setdefault(form, set()).add(action)
        return {form: frozenset(actions) for form, actions in found.items()}

    return _Forms(doing, by_form(UNDOING), by_form(UNDOING_NAMED), naming)


def _redone(token: str) -> str | None:
    """ "reinstall", "refreeze": the action done again."""
    return _forms().doing.get(token[2:]) if token.startswith("re") else None


def _asked(tokens: tuple[str, ...], position: int) -> bool:
    """Whether the word at `position` reads as something the request asks for."""
    two_before = tokens[max(0, position - 2) : position]
    three_before = tokens[max(0, position - 3) : position]
    return not (
        NEGATIONS.intersection(two_before)
        or _STOPPING.intersection(two_before)
        or _CONDITIONS.intersection(three_before)
        or (position and tokens[position - 1] in _NOT_A_REQUEST_AFTER)
    )


def _turned_off(tokens: tuple[str, ...], position: int) -> bool:
    return tokens[position] in _SWITCHING and "off" in tokens[position + 1 : position + 1 + _OFF_REACH]


def _put_back(tokens: tuple[str, ...], position: int) -> bool:
    """ "put it back", "turn the mics back on" ("get my money back" undoes nothing)."""
    if tokens[position] != "back":
        return False
    for verb_position in range(max(0, position - _BACK_REACH), position):
        verb = tokens[verb_position]
        if not _asked(tokens, verb_position):
            continue
        if verb in _PUT_BACK or (verb in _TURNED_BACK_ON and tokens[position + 1 : position + 2] == ("on",)):
            return True
    return False


@dataclass(frozen=True)
class Doings:
    """The undoable actions a request asks to do, those it asks to do again ("reinstall",
    also in `done`), and those it asks to undo (-> the word)."""

    done: frozenset[str]
    redone: frozenset[str]
    undone: dict[str, str]


@lru_cache(maxsize=4096)
def doings(tokens: tuple[str, ...]) -> Doings:
    """What a request's words (pair_reading.Reading.tokens) ask to do, do again and undo."""
    forms = _forms()
    doing, naming = forms.doing, forms.naming
    named = {naming[token] for token in tokens if token in naming}
    done: set[str] = set()
    redone: set[str] = set()
    undone: dict[str, str] = {}
    undone_at: dict[str, int] = {}  # action -> where a word undoing it last stood
    for position, token in enumerate(tokens):
        reversed_here = _REVERSING.intersection(tokens[max(0, position - 2) : position])
        if token in naming and reversed_here:
            undone.setdefault(naming[token], next(iter(reversed_here)))
        if not _asked(tokens, position):
            continue
        action = doing.get(token)
        # "lift a credit freeze": the freeze is what is lifted, not something asked for.
        if action and position - undone_at.get(action, -_OBJECT_REACH - 1) > _OBJECT_REACH:
            done.add(action)
        again = _redone(token)
        if again:
            redone.add(again)
        if _turned_off(tokens, position):
            done.add("disable")
        undone_here = forms.undoing.get(token, frozenset())
        for action in undone_here | (forms.undoing_where_named.get(token, frozenset()) & named):
            undone.setdefault(action, token)
            undone_at[action] = position
        if _put_back(tokens, position):
            undone.setdefault(ANY_ACTION, token)
    return Doings(frozenset(done | redone), frozenset(redone), undone)


def undone_by_first(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, str] | None:
    """An action `second` asks to do that `first` undoes and neither does the other way:
    (the undoing word, the action). A request that both does and undoes an action ("uninstall
    and reinstall") is left to the model, and putting back does not undo doing again ("put the
    chicken back in the freezer" / "refreeze the chicken")."""
    one, other = doings(first), doings(second)
    if ANY_ACTION in other.undone:
        return None
    for action in sorted(other.done - other.undone.keys() - one.done):
        word = one.undone.get(action) or (None if action in other.redone else one.undone.get(ANY_ACTION))
        if word:
            return word, action
    return None
