"""The explainable vetoes beside the learned verifier: each names a real difference and
leaves rewordings alone."""

import pytest

from inference.pair_bounds import ABOVE, BELOW
from inference.pair_conflicts import (
    NEGATION,
    NEGATION_VETO_MAX_CHANGED,
    REWORDED_NEGATION,
    SWAPPED_WORD,
    Assessment,
    _flips,
    assess,
    checked,
    conflict,
    vetoed,
)
from inference.pair_reading import read

NEAR_MISSES = [
    ("Reset after 3 failed attempts", "Reset after 5 failed attempts", "different numbers"),
    ("Logs from March 3, 2025", "Logs from 2025-03-04", "different numbers"),
    ("Battery life of the Galaxy S23", "Battery life of the Galaxy S24", "different codes"),
    ("How do I increase my credit limit?", "How can I get my credit limit decreased?", "opposites"),
    ("List laptops priced under $800", "Which laptops cost more than $800?", "opposite bounds"),
    # A bound is read as a phrase: "minimum" sits at the low end of a scale, and asks for more.
    ("I need a minimum of 20 GB of data", "plans with twenty gigabytes of data or less", "opposite bounds"),
    ("phone plans 20gb or more", "Show me phone plans with at most 20 GB of data.", "opposite bounds"),
    ("apps for iOS 16 and later", "apps for iOS 16 or earlier", "opposite bounds"),
    ("How do I play F minor on guitar?", "Show me how to form F major on a guitar.", "opposites"),
    # "check-in" / "checkout" are read as the verb and its particle, whose opposite is the other's.
    ("standard check-in hour for Marriott", "What time do I have to check out of a Marriott?", "in / out"),
    # Two opposites do not cancel each other: only a negation cancels one.
    ("How can I request a late check-out at a hotel?", "hotel early check in", "opposites"),
    ("my resting heart rate is below 50, why?", "high resting heart rate causes", "opposites"),
    ("How do I turn on 2FA on GitHub?", "How do I turn off 2FA on GitHub?", "opposites"),
    # Keeping what an undo leaves against throwing it away, however far the wording moved.
    (
        "git undo last commit keep changes",
        "What is the command to remove the most recent Git commit and discard all of its changes?",
        "opposites: keep / discard",
    ),
    (
        "How do I roll back my last Git commit while preserving the modifications?",
        "git undo last commit discard changes",
        "opposites: preserve / discard",
    ),
    # "un-" negates "commit" here, so it cancels no opposite: "keep" / "discard" still vetoes.
    ("git uncommit last commit keep my work", "git undo last commit and discard changes", "keep / discard"),
    ("Which fruits can dogs eat?", "Which fruits can't dogs eat?", "negation"),
    ("Is codeine safe while breastfeeding?", "Is codeine unsafe while breastfeeding?", "negation"),
    ("Last train from Milan to Florence tonight", "Last train from Florence to Milan tonight", "direction"),
    ("Convert 250 USD to EUR.", "250 EUR to USD - what's the amount?", "direction"),
    # Found whichever request comes first (once only one order found it).
    (
        "I have a dozen tabs open and want to go one tab back to the left without the mouse. Shortcut?",
        "What's the shortcut to go to the tab on the right in Chrome?",
        "direction",
    ),
    (
        "At 100 Mbps, how long does a 10 GB download take?",
        "At 100 MB/s, how long does a 10 GB download take?",
        "different units",
    ),
    ("How much is 250 euros in US dollars?", "How much is 250 US dollars in euros?", "250"),
    ("What's the weather in Oslo today?", "What's the weather in Oslo tomorrow?", "different units"),
    ("iPhone 15 Pro battery capacity", "iPhone 15 battery capacity", "variant"),
    # Ordinals, spelled or in digits, are compared with ordinals.
    (
        "Who was the first man on the moon?",
        "Who was the second man on the moon?",
        "different ordinals: 1 / 2",
    ),
    ("Who was the second person to walk on the moon?", "first man on the moon", "different ordinals"),
    ("What does the second amendment protect?", "what does the 3rd amendment protect", "different ordinals"),
    ("What was the twenty-second amendment about?", "the 21st amendment", "different ordinals: 22 / 21"),
    ("How do I treat a second degree burn at home?", "home treatment for third degree burns", "ordinals"),
    ("Apple 2023 second quarter earnings", "Apple 2023 3rd quarter earnings", "different ordinals"),
    ("date of the first Monday in May", "date of the final Monday in May", "opposites: first / final"),
    ("date of the 1st Monday in May", "date of the final Monday in May", "opposites: first / final"),
    ("the 1st day of school", "When is the last day of school?", "opposites: first / last"),
    ("the last Harry Potter book", "the second-to-last Harry Potter book", "different ordinals"),
    ("days from June 2nd to last Friday", "days from June 3 to last Friday", "different numbers: 2 / 3"),
    ("population of 1,234,567", "population of 1,234,568", "different numbers: 1234567 / 1234568"),
    # A position counted from the end is another position.
    (
        "plot of the 2nd to last episode of Friends",
        "plot of the 2nd episode of Friends",
        "2 from the end / 2",
    ),
    ("the second-to-last Harry Potter book", "the second Harry Potter book", "different ordinals"),
    ("hotels near the 101st street station", "hotels near the one hundred and second street station", "101"),
    # A spelled day beside a month is a date.
    ("Is the bank open on May fifth?", "Is the bank open on May 1?", "different numbers: 5 / 1"),
    ("Which weekday is the Fourth of July in 2026?", "What day of the week is July 14, 2026?", "numbers"),
    # A verb undone by its prefix is vetoed, not cautioned as a word swapped.
    (
        "how to install Chrome",
        "how to uninstall Chrome",
        "one undoes what the other does: install / uninstall",
    ),
    # A swap in a longer request, all else the same: the one word is the whole difference.
    (
        "What is the Gobi, and how do the average temperatures there compare to those of the Mojave Desert?",
        "What is the Gobi, and how do the average temperatures there compare to those of the Sonoran Desert?",
        "one word swapped for another in a longer request: mojave / sonoran",
    ),
    ("25 degrees C to kelvin", "25 degrees F to kelvin", "different units: celsius / fahrenheit"),
    ("What is 40°C in kelvin?", "What is 40 °F in kelvin?", "different units"),
    ("python3 print without newline", "How do I print without a newline in Python 2?", "different numbers"),
    ("fruits toxic to dogs list", "what fruit is ok to give my dog", "opposites: toxic / ok"),
    ("What does $2,000 grow to in a decade at 4%?", "$2,000 at 4% for 5 years", "different numbers"),
    # An action undone on one side, though both sides name it.
    ("Could you explain how to reveal hidden columns in Excel?", "excel hide columns", "one undoes"),
    ("My Equifax report is frozen. How do I thaw it?", "freeze credit report equifax", "one undoes"),
    (
        "Steps to re-enable a disabled account in Active Directory",
        "disable a user account in AD",
        "one undoes",
    ),
    (
        "How can a Zoom host get everyone to turn their mics back on?",
        "zoom host mute all participants",
        "back",
    ),
    (
        "Switched off autocorrect last week; how do I switch it back on?",
        "turn off autocorrect iphone",
        "back",
    ),
    ("How do I put an archived Instagram post back on my profile?", "instagram archive a post", "back"),
    (
        "What is the process for restoring a deactivated Facebook account?",
        "deactivate facebook account",
        "restoring",
    ),
    ("how do I turn autocorrect off", "re-enable autocorrect iphone", "one undoes"),
    ("turning everyone's mics back on in zoom", "zoom mute all participants", "back"),
    ("undo archive in gmail", "archive an email in gmail", "undo"),
    ("How do I retrieve deleted emails in Gmail?", "delete old emails in gmail", "retrieve"),
    ("lift a credit freeze at experian", "freeze credit at experian", "lift"),
    ("remove the sim lock from my phone", "how do I lock my phone's sim card", "remove"),
    # The same words, with two things trading places around words that stay.
    ("Are PS4 games playable on the PS5?", "Are PS5 games playable on the PS4?", "places traded: ps4 / ps5"),
    ("roll an IRA into a 401k", "roll a 401k into an IRA", "places traded: an ira / a 401k"),
    (
        "What to do when my dog has bitten a neighbour's kid?",
        "What to do when a neighbour's dog has bitten my kid?",
        "places traded: my / a neighbour s",
    ),
    (
        "How many times has Rafael Nadal beaten Roger Federer?",
        "How many times has Roger Federer beaten Rafael Nadal?",
        "places traded: rafael nadal / roger federer",
    ),
    # Around a direction word, the direction check names the swap first.
    ("Is Kilimanjaro taller than Mont Blanc?", "Is Mont Blanc taller than Kilimanjaro?", "direction swapped"),
    # A middle with "and" that is no join of two like things.
    (
        "I owe $5,000 on a Citi card and just got a Chase card with 0% on transfers. How do I move it?",
        "I owe $5,000 on a Chase card and just got a Citi card with 0% on transfers. How do I move it?",
        "places traded: citi / chase",
    ),
]

PARAPHRASES = [
    ("git undo last commit keep changes", "undo my last git commit but keep the changes I made"),
    (
        "Show me the application logs from 2024-03-13.",
        "I need the application log entries from March 13, 2024.",
    ),
    (
        "Monthly repayment for a $25,000, 5-year loan",
        "What do I pay each month on a 25000 dollar loan over five years?",
    ),
    ("Is it not safe to mix these?", "Is it unsafe to mix these?"),
    ("What happens if I sign the non-compete?", "what happens when i agree to sign a noncompete"),
    ("Why can't I keep my number?", "why cant i keep my number"),
    ("How many miles is it from Lyon to Geneva?", "How far is it from Lyon to Geneva in miles?"),
    ("Look up low-cost flights New York to Berlin", "Find me cheap flights from New York to Berlin"),
    ("Lock a Linux account after 3 unsuccessful logins", "Lock a Linux account after 3 failed logins"),
    ("Twenty-five dollars in euros", "25 dollars in euros"),
    (
        "How do I copy a file from my laptop to a server with scp?",
        "scp: copy a file from my laptop to a server",
    ),
    # One word swapped for a synonym, an inflection, a spelling or a light word.
    ("How do I buy a used car?", "How do I purchase a used car?"),
    ("Why do kids get hiccups?", "Why do children get hiccups?"),
    ("How can I reduce my electricity bill?", "How can I lower my electricity bill?"),
    ("favourite pizza toppings in Italy", "favorite pizza toppings in Italy"),
    ("50 lb in kg", "50 lb to kg"),
    ("Is it safe to feed dogs grapes?", "Is it ok to feed dogs grapes?"),
    ("how to organise a closet", "how to organize a closet"),
    ("uninstall Docker", "remove Docker"),
    # "Ok" opening a sentence is a discourse marker, not the opposite of "toxic".
    ("Ok so which plants are toxic to cats?", "Which plants are toxic for cats?"),
    # A number run into a word is a version; a finer version on the other side refines it.
    ("python3 print without newline", "print without a newline in Python 3"),
    ("How much does $2,000 grow in a decade at 4%?", "$2,000 at 4% over ten years"),
    ("suppress the newline of print in py3", "In Python 3.11, how can I stop print() adding a line break?"),
    # An ordinal spelled out or in digits is one; an ordinal is no count.
    ("What does the 2nd amendment protect?", "what does the second amendment protect"),
    ("When is the 4th of July parade?", "when is the fourth of july parade"),
    ("What was the twenty-second amendment about?", "What was the 22nd amendment about?"),
    ("Art of the twenty-first century", "art of the 21st century"),
    ("First aid for a toddler who swallowed a battery", "What to do if my 2 year old swallowed a battery"),
    ("Is second hand smoke harmful to a baby?", "Is passive smoking harmful to a 1 year old?"),
    ("My first marathon is on Sunday, what should I eat?", "what to eat before running 42 km"),
    ("what day is the fourth of july 2026", "What day of the week is July 4, 2026?"),
    ("Is the bank open on May fifth?", "is the bank open may 5th"),
    ("what day is 4th july 2027", "2027-07-04 day of week"),
    ("tips for my 1st marathon", "Any tips for running my first marathon?"),
    # "1st" is read as "first" only by the opposites check, not by the one-word swap check.
    ("Taylor Swift 1st album", "What was Taylor Swift's debut album?"),
    ("King Charles III coronation", "King Charles the 3rd coronation"),
    ("3rd trimester symptoms", "final trimester symptoms"),
    # "and" inside a spelled number, and a position counted from the end however written.
    ("one hundred and fifty dollars in euros", "150 USD to EUR"),
    ("What happened on the one hundred and first day?", "what happened on day 101st"),
    ("between one hundred and two hundred dollars", "between $100 and $200"),
    ("two thousand and five film awards", "2005 film awards"),
    ("the 2nd-to-last episode of Friends", "the second to last episode of Friends"),
    ("the third from last chapter", "3rd to last chapter"),
    ("plot of the second to the last episode of Friends", "plot of the 2nd last episode of Friends"),
    ("the second from the last episode", "the second-to-last episode"),
    ("June 2nd to last Friday", "June 2nd until last Friday"),
    ("who was the first to last a year in space", "who was the first person to last a year in space"),
    ("a hundred and fifty dollars", "$150"),
    ("a thousand and one nights", "1001 nights"),
    ("the final exam date", "when is the last exam"),
    # A bare "the last" may be any position: only a position from the end contradicts it.
    ("Oscars won by the third Lord of the Rings film", "Oscars won by the final film of the trilogy"),
    ("third trimester symptoms", "symptoms in the last three months of pregnancy"),
    # A currency symbol before a number is its unit, whatever unit follows.
    ("How much is $250 in euros?", "How much is 250 dollars in euros?"),
    # Undoing said two ways, or a state named by its participle, is no reversal.
    ("reveal hidden columns in excel", "how do I unhide columns in Excel"),
    ("How do I retrieve deleted emails in Gmail?", "recover deleted gmail emails"),
    ("turn autocorrect back on iphone", "How do I switch autocorrect on again on my iPhone?"),
    ("show me how to hide columns in excel", "excel hide columns"),
    ("how to mute and unmute in zoom", "zoom mute shortcut"),
    ("As the Zoom host, how do I let everyone talk again after muting them?", "zoom host ask all to unmute"),
    ("git unstash without deleting the stash", "git stash apply keep the entry"),
    ("How do I get my money back if I cancel my flight?", "refund when I cancel a flight"),
    # Stopped, conditional, past, noun or state: the action is not what is asked.
    ("How do I unfollow someone on Instagram?", "how to stop following someone on instagram"),
    ("unblock pop-ups in chrome", "how do I stop chrome from blocking pop-ups"),
    ("how to unblock someone on facebook", "how to undo blocking someone on facebook"),
    ("How do I unfreeze my laptop?", "my laptop keeps freezing, how do I fix it"),
    ("how do I defrost my car windshield", "clear ice off the car windshield when it's freezing outside"),
    ("how to get my account back after they suspend it", "reinstate suspended account"),
    ("Zoom: I can't unmute myself", "zoom keeps muting me and I can't turn my mic on"),
    ("how to unpin a chat in whatsapp", "remove a chat from the pins at the top in whatsapp"),
    ("factory reset iphone and delete everything", "restore iphone to factory settings"),
    ("how to uninstall and reinstall chrome", "remove chrome and install it again"),
    ("Is it safe to put raw chicken back in the freezer after thawing it?", "refreeze thawed chicken"),
    ("how to unmute in zoom", "how to mute and unmute in zoom"),
    ("How do I remove the iCloud lock from my iPhone?", "How to unlock iCloud on my iPhone"),
    ("bypass activation lock on a used ipad", "unlock a second-hand iPad's activation lock"),
    # One part moved past the rest, or two things joined by a word that orders nothing.
    ("carbon atomic number", "atomic number carbon"),
    ("us tablespoon ml", "tablespoon ml us"),
    ("one on one tutoring cost", "tutoring cost one on one"),
    ("difference between cats and dogs", "difference between dogs and cats"),
    ("is the cat or the dog smarter", "is the dog or the cat smarter"),
    ("difference between match fixing and spot fixing", "difference between spot fixing and match fixing"),
    ("distance between New York and New Jersey", "distance between New Jersey and New York"),
    ("a crocodile and an alligator: which bites harder", "an alligator and a crocodile: which bites harder"),
    ("difference between the cat & the dog", "difference between the dog & the cat"),
    ("Python vs Java speed", "Java vs Python speed"),
    ("what is 7 times 8", "what is 8 times 7"),
]

BOUNDED_ALIKE = [
    # Bounds the same way, however written, and bounds of two different things.
    ("I need a minimum of 20 GB of data a month", "plans with 20 GB or more"),
    ("laptops for no more than $500", "laptops under $500"),
    ("kids 12 and under eat free", "do children under 12 eat free"),
    ("flight delayed over 3 hours, compensation?", "payout for a 3 hour delay on a flight under 1,500 km"),
    ("iPhone 15 Pro Max battery", "iphone 15 pro max battery life"),
    ("gmail log in", "gmail login"),
]


# One content word swapped for one that is not a synonym: cautioned, not vetoed (served only
# where the verifier is sure: pair_verifier.CAUTION_MIN_SCORES).
SWAPPED_WORDS = [
    ("When is a brake fluid flush due?", "When is a transmission fluid flush due?", "brake / transmission"),
    # Names WordNet does not list are compared as nouns.
    ("Default shell on macOS Ventura", "Default shell on macOS Monterey", "another: monterey / ventura"),
    ("Is a tomato a fruit?", "Is a tomato a vegetable?", "another: fruit / vegetable"),
    # A shared start is no kinship.
    ("learn Java online", "learn JavaScript online", "another: java / javascript"),
    ("visa for Austria", "visa for Australia", "another: australia / austria"),
    ("wireless headphones", "wired headphones", "another: wired / wireless"),
    ("next train to Paris", "first train to Paris", "another: first / next"),
    ("Which decade had the most hurricanes?", "Which year had the most hurricanes?", "decade / year"),
]


@pytest.mark.parametrize(("a", "b", "reason"), NEAR_MISSES)
def test_near_misses_are_vetoed_with_a_reason(a, b, reason):
    found = conflict(a, b)
    assert found is not None and reason in found
    assert conflict(b, a) is not None  # symmetric


@pytest.mark.parametrize(("a", "b", "reason"), SWAPPED_WORDS)
def test_a_word_swapped_is_cautioned_with_a_reason(a, b, reason):
    for first, second in ((a, b), (b, a)):
        found = assess(first, second)
        assert found.veto is None
        assert found.caution is not None and found.caution.startswith(SWAPPED_WORD)
        assert reason in found.caution


@pytest.mark.parametrize(("a", "b"), PARAPHRASES)
def test_rewordings_pass(a, b):
    assert conflict(a, b) is None
    assert conflict(b, a) is None


def test_second_is_time_after_a_count_and_a_position_otherwise():
    for text in ("a 30 second plank", "60 frames per second", "in one second", "a split second"):
        assert not read(text).ordinals, text
    for text in ("my second monitor", "a second booster", "Apple 2023 second quarter", "the 2nd dose"):
        assert read(text).ordinals == {"2": 1}, text


def test_a_round_hundred_and_an_ordinal_is_one_position_only_after_and():
    assert read("the one hundred and first day").ordinals == {"101": 1}
    assert read("one hundred first graders").numbers == {"100": 1}  # a hundred of them


def test_numbers_are_read_alike_whatever_their_spelling():
    assert read("twenty-five thousand dollars").numbers == read("$25,000").numbers == read("25k USD").numbers
    assert read("March 3, 2025").numbers == read("2025-03-03").numbers


def test_a_negation_cancelled_by_an_opposite_passes():
    assert (
        conflict("Which drugs are not safe with grapefruit?", "Which drugs are dangerous with grapefruit?")
        is None
    )


def test_a_negation_in_reworded_requests_cautions_instead_of_vetoing():
    """A negation on one side of two requests that share little is part of the telling as
    often as not ("toxic" / "never eat", "don't want it listening" / "switch off its
    microphone"): the verifier must be sure of the pair, no check refuses it outright."""
    reworded = [
        ("fruits toxic to dogs list", "Which fruits must dogs never eat?"),
        (
            "I'm having a private conversation and don't want my Google Home listening. "
            "How do I switch off its microphone?",
            "stop google home from listening",
        ),
    ]
    for a, b in reworded:
        for first, second in ((a, b), (b, a)):
            assert assess(first, second) == Assessment(None, REWORDED_NEGATION)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Which fruits can dogs eat?", "Which fruits can't dogs eat?"),
        ("pancake recipe with eggs", "pancake recipe without eggs"),
        (
            "How do I grep for lines that don't contain the word error?",
            "How do I grep for lines that contain the word error?",
        ),
        ("Fruits that are fine for dogs to eat?", "Fruits that dogs must not eat?"),
    ],
)
def test_a_negation_that_changes_few_words_still_vetoes(a, b):
    assert assess(a, b) == Assessment(NEGATION, None)


def test_the_negation_veto_ends_where_more_than_its_limit_of_words_differ():
    """NEGATION_VETO_MAX_CHANGED content words on one side only (the negation counted) still
    veto; one more cautions."""
    at_limit = ("Which fruits can dogs eat?", "Which fruits can't puppies eat safely?")
    past_it = ("Which fruits can dogs eat?", "Which fruits can't puppies eat safely daily?")
    assert _flips(read(at_limit[0]), read(at_limit[1])).changed == NEGATION_VETO_MAX_CHANGED
    assert assess(*at_limit) == Assessment(NEGATION, None)
    assert assess(*past_it) == Assessment(None, REWORDED_NEGATION)


def test_a_caution_never_hides_a_veto_after_it():
    """The negation check no longer ends the checks early: a reworded pair that also swaps a
    direction is vetoed for it."""
    found = assess(
        "I don't have euros yet and need to change 100 USD to EUR before my trip. What rate will I get?",
        "100 EUR to USD rate",
    )
    assert found.veto is not None and "direction" in found.veto and found.caution is None


def test_checked_says_which_pairs_are_vetoed_and_how_others_are_cautioned():
    pairs = [
        ("Which fruits can dogs eat?", "Which fruits can't dogs eat?"),
        ("fruits toxic to dogs list", "Which fruits must dogs never eat?"),
        ("How do I boil an egg?", "How long do I boil an egg for?"),
        ("wireless headphones", "wired headphones"),
    ]
    vetoed_mask, cautions = checked(pairs)
    assert vetoed_mask.tolist() == [True, False, False, False]
    assert cautions == [None, REWORDED_NEGATION, None, SWAPPED_WORD]
    assert vetoed(pairs).tolist() == vetoed_mask.tolist()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I get from the airport to downtown?", "How do I get downtown from the airport?"),
        ("Flights from NYC to London", "NYC to London flights"),
        ("uninstall Docker", "remove Docker"),
        ("Should I get a flu shot or not?", "Should I get a flu shot?"),
        ("Why wont my car start?", "Why won't my car start?"),
        ("tire air pressure", "tire pressure"),
        ("Excel 2016 pivot table", "excel twenty sixteen pivot table"),
        ("Budget of two thousand five hundred dollars", "Budget of $2,500"),
        ("What's a 15% tip on a $64 bill?", "Fifteen percent tip if dinner cost $64.00?"),
        (
            "My son asked which planet has the most moons and I honestly don't know. Could you help?",
            "Which planet has the most moons?",
        ),
        ("I'm not sure: is a tomato a fruit?", "Is a tomato a fruit?"),
    ],
)
def test_reordered_or_respelled_requests_pass(a, b):
    assert conflict(a, b) is None


def test_versions_are_compared_as_written():
    assert "different numbers" in conflict("What's new in Python 3.10?", "What's new in Python 3.1?")
    assert "different numbers" in conflict("a $64.50 bill", "a $64 bill")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("I don't know the way to the station", "I know the way to the station"),
        ("Which fruits don't dogs eat? I'm not sure.", "Which fruits do dogs eat?"),
        (
            "I don't know how to swim. Is snorkeling safe for me?",
            "I know how to swim. Is snorkeling safe for me?",
        ),
        (
            "I'm not sure if I'm allergic to penicillin; can I take amoxicillin?",
            "I'm allergic to penicillin; can I take amoxicillin?",
        ),
        ("We don't know where the leak is. Who do we call?", "We know where the leak is. Who do we call?"),
    ],
)
def test_a_hedge_standing_alone_is_no_negation_but_a_negated_statement_is(a, b):
    assert "negation" in conflict(a, b)


def test_a_version_run_into_a_word_is_refined_only_by_a_finer_version():
    assert read("py3").numbers == read("Python 3").numbers
    assert conflict("py3 print", "Python 2.7 print") is not None
    assert conflict("3 cups of flour", "3.5 cups of flour") is not None  # a plain number is not a version
    # Refining the version leaves the request's other numbers to compare.
    found = conflict("run a python3 script on 3 cores", "run a python 3.11 script on 4 cores")
    assert found is not None and "different numbers" in found


def test_a_swap_inside_a_reworded_request_is_left_to_the_model():
    # More than one content word differs: not a single substitution.
    assert conflict("Can dogs eat grapes?", "Are grapes bad for cats?") is None


def test_a_swap_of_long_passages_is_found_fast_and_shown_short():
    """Two answers judged in both orders: each passage is long, and the reason stays short."""
    first = " ".join(f"alpha{i}" for i in range(800))
    second = " ".join(f"beta{i}" for i in range(800))
    found = conflict(
        f"Response one: {first}. Response two: {second}.", f"Response one: {second}. Response two: {first}."
    )
    shown_first, shown_second = (
        "alpha0 alpha1 alpha2 alpha3 alpha4 alpha5 ...",
        "beta0 beta1 beta2 beta3 beta4 beta5 ...",
    )
    assert found == f"places traded: {shown_first} / {shown_second}"


@pytest.mark.parametrize(("a", "b"), BOUNDED_ALIKE)
def test_bounds_the_same_way_or_of_different_things_pass(a, b):
    assert conflict(a, b) is None
    assert conflict(b, a) is None


def test_a_bound_is_read_before_or_after_its_number():
    def directions(text):
        return {(bound.direction, bound.number) for bound in read(text).bounds}

    assert directions("at least 20 GB") == directions("twenty GB of data or more") == {(ABOVE, "20")}
    assert directions("up to $500") == directions("500 dollars or less") == {(BELOW, "500")}
    assert directions("over the weekend") == directions("a minimum wage job") == set()
    assert directions("over 18 and under 65") == {(ABOVE, "18"), (BELOW, "65")}
    assert conflict("ages 18 and over", "ages between 18 and 65") is None


def test_a_retirement_plan_is_one_code_however_written():
    assert read("my 401(k) in 2024").codes == read("my 401k in 2024").codes == {"401k"}
    assert read("my 401k in 2024").numbers == read("in 2024").numbers  # no 401,000
    assert conflict("withdraw from my 401(k)", "withdraw from my 401k") is None
    assert "different codes" in conflict("withdraw from my 401(k)", "withdraw from my 403(b)")
    assert "different codes" in conflict("roll over a 401k", "roll over a 457b")


def test_un_or_non_negates_only_a_word_and_not_a_name():
    for word in ("unsafe", "nonrefundable", "unskippable", "unsharable", "noncancellable"):
        assert read(f"is it {word}?").negations == 1, word
    for name in ("Is Uniqlo legit?", "Unilever brands", "is unifunds legit"):
        assert read(name).negations == 0, name
    assert conflict("Is unifunds.com legit?", "Is unifunds legit?") is None
