"""Word lists the pair checks read: opposites, units by kind, negations, number words.

General English, written as data for the checks in inference/pair_conflicts.py.
Entries are base forms; inflected forms (thinner, cheapest, disabled, logs) are
derived in pair_reading.base_form.
"""

from __future__ import annotations

# Pairs whose swap changes the answer. Base forms, lower case.
OPPOSITES: tuple[tuple[str, str], ...] = (
    ("gain", "lose"),
    ("win", "lose"),
    ("many", "few"),
    ("much", "little"),
    ("upload", "download"),
    ("upstream", "downstream"),
    ("upper", "lower"),
    ("uppercase", "lowercase"),
    ("before", "after"),
    ("early", "late"),
    ("earliest", "latest"),
    ("first", "last"),
    ("first", "final"),
    ("next", "last"),
    ("next", "previous"),
    ("start", "stop"),
    ("start", "end"),
    ("begin", "end"),
    ("open", "close"),
    ("open", "closed"),
    ("on", "off"),
    ("in", "out"),
    ("login", "logout"),
    ("enable", "disable"),
    ("activate", "deactivate"),
    ("allow", "block"),
    ("allow", "deny"),
    ("allow", "forbid"),
    ("allowed", "forbidden"),
    ("permit", "prohibit"),
    ("keep", "discard"),
    ("preserve", "discard"),
    ("retain", "discard"),
    ("save", "discard"),
    ("accept", "reject"),
    ("approve", "reject"),
    ("include", "exclude"),
    ("add", "remove"),
    ("add", "subtract"),
    ("add", "delete"),
    ("create", "delete"),
    ("insert", "delete"),
    ("encrypt", "decrypt"),
    ("compress", "decompress"),
    ("encode", "decode"),
    ("connect", "disconnect"),
    ("attach", "detach"),
    ("hide", "show"),
    ("pause", "resume"),
    ("merge", "split"),
    ("join", "leave"),
    ("hire", "fire"),
    ("buy", "sell"),
    ("purchase", "sell"),
    ("borrow", "lend"),
    ("lend", "repay"),
    ("deposit", "withdraw"),
    ("debit", "credit"),
    ("income", "expense"),
    ("profit", "loss"),
    ("import", "export"),
    ("input", "output"),
    ("inbound", "outbound"),
    ("incoming", "outgoing"),
    ("send", "receive"),
    ("push", "pull"),
    ("give", "take"),
    ("ask", "answer"),
    ("arrive", "depart"),
    ("arrival", "departure"),
    ("enter", "exit"),
    ("entry", "exit"),
    ("inside", "outside"),
    ("internal", "external"),
    ("indoor", "outdoor"),
    ("front", "back"),
    ("forward", "backward"),
    ("left", "right"),
    ("north", "south"),
    ("east", "west"),
    ("top", "bottom"),
    ("best", "worst"),
    ("better", "worse"),
    ("good", "bad"),
    ("cheap", "expensive"),
    ("big", "small"),
    ("large", "small"),
    ("long", "short"),
    ("tall", "short"),
    ("wide", "narrow"),
    ("thick", "thin"),
    ("heavy", "light"),
    ("dark", "light"),
    ("hot", "cold"),
    ("warm", "cool"),
    ("heat", "cool"),
    ("fast", "slow"),
    ("quick", "slow"),
    ("easy", "hard"),
    ("easy", "difficult"),
    ("simple", "complex"),
    ("strong", "weak"),
    ("hard", "soft"),
    ("wet", "dry"),
    ("full", "empty"),
    ("rich", "poor"),
    ("old", "new"),
    ("old", "young"),
    ("young", "elderly"),
    ("new", "used"),
    ("fresh", "frozen"),
    ("raw", "cooked"),
    ("sweet", "sour"),
    ("major", "minor"),
    ("loud", "quiet"),
    ("safe", "dangerous"),
    ("safe", "toxic"),
    ("safe", "harmful"),
    ("safe", "poisonous"),
    ("ok", "toxic"),  # "okay" is read as "ok"
    ("ok", "poisonous"),
    ("ok", "dangerous"),
    ("ok", "harmful"),
    ("lose", "find"),
    ("hire", "dismiss"),
    ("legal", "illegal"),
    ("valid", "invalid"),
    ("possible", "impossible"),
    ("true", "false"),
    ("right", "wrong"),
    ("correct", "incorrect"),
    ("positive", "negative"),
    ("plus", "minus"),
    ("pros", "cons"),
    ("advantage", "disadvantage"),
    ("benefit", "risk"),
    ("love", "hate"),
    ("like", "dislike"),
    ("happy", "sad"),
    ("agree", "disagree"),
    ("success", "failure"),
    ("include", "omit"),
    ("always", "never"),
    ("all", "none"),
    ("most", "least"),
    ("promote", "demote"),
    ("everything", "nothing"),
    ("everyone", "nobody"),
    ("public", "private"),
    ("online", "offline"),
    ("remote", "local"),
    ("client", "server"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("static", "dynamic"),
    ("mutable", "immutable"),
    ("ascending", "descending"),
    ("horizontal", "vertical"),
    ("horizontally", "vertically"),
    ("male", "female"),
    ("man", "woman"),
    ("men", "women"),
    ("boy", "girl"),
    ("husband", "wife"),
    ("father", "mother"),
    ("son", "daughter"),
    ("brother", "sister"),
    ("child", "adult"),
    ("kid", "adult"),
    ("student", "teacher"),
    ("employer", "employee"),
    ("landlord", "tenant"),
    ("buyer", "seller"),
    ("sender", "recipient"),
    ("parent", "child"),
    ("beginner", "advanced"),
    ("beginner", "expert"),
    ("junior", "senior"),
    ("day", "night"),
    ("morning", "evening"),
    ("summer", "winter"),
    ("spring", "autumn"),
    ("spring", "fall"),
    ("past", "future"),
    ("weekday", "weekend"),
    ("domestic", "international"),
    ("national", "international"),
    ("vegan", "vegetarian"),
    ("sweet", "savory"),
    ("offense", "defense"),
    ("attack", "defend"),
    ("inhale", "exhale"),
    ("expand", "collapse"),
    ("maximize", "minimize"),
    ("overestimate", "underestimate"),
    ("overpay", "underpay"),
    ("overweight", "underweight"),
    ("overcharge", "undercharge"),
)

# Two ends of one scale: any word of one end against any word of the other is a flip
# ("priced under $800" / "costs more than $800", "raise" / "lower").
# fmt: off
SCALES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (
        ("more", "over", "above", "higher", "greater", "larger", "bigger", "exceed", "increase", "raise",
         "rise", "grow", "upgrade", "maximum", "max", "up", "high", "plus", "expensive"),
        ("less", "fewer", "under", "below", "lower", "smaller", "decrease", "reduce", "drop", "fall",
         "shrink", "downgrade", "minimum", "min", "down", "low", "minus", "cheap"),
    ),
    (
        ("any", "anything", "anyone", "anybody", "some", "single"),
        ("all", "every", "everything", "everyone", "everybody"),
    ),
    (("exactly",), ("least", "most", "more")),
)
# fmt: on

# Words too light to carry what a request asks about: prepositions, quantifiers, light
# verbs (beside the stopwords and determiners pair_conflicts already skips). The
# substitution check looks past them, so "50 lb in kg" / "50 lb to kg" and "how often" /
# "how many" are never read as one word swapped for another.
LIGHT_WORDS: frozenset[str] = frozenset(
    """in on to into onto from without off up down out over under per via vs versus many much
    often more most less few any all each every no not than then also just only very too
    really have has had get gets got getting need needs want wants make makes use using used
    go going way ways thing things best good better ok them they he she him im""".split()
)

# Words that name a variant of the product just before them (iPhone 15 / iPhone 15 Pro).
VARIANTS: frozenset[str] = frozenset({"pro", "max", "plus", "mini", "ultra", "lite", "air", "se", "xl"})

# Particles whose opposite counts only in the same place (turn on / turn off, log in / log out):
# elsewhere they are plain prepositions ("look up cheap flights").
SITUATED: frozenset[str] = frozenset({"on", "off", "in", "out", "up", "down", "to", "from"})

# Negation markers ("n't" is read as "not"), and "fail" ("fail to pay" = "don't pay",
# "failed logins" = "unsuccessful logins"); other verbs with a negative sense (avoid,
# refuse, lack) are left to the model: they have plain paraphrases ("prevent").
# A word made negative by "un" or "non" (unsafe, uninsured) counts as one too, so
# "not safe" = "unsafe".
NEGATIONS: frozenset[str] = frozenset(
    {"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "zero", "fail"}
)
# Verbs that undo rather than negate: "uninstall Docker" = "remove Docker", not "not install".
REVERSIBLE: frozenset[str] = frozenset(
    {
        "install",
        "lock",
        "subscribe",
        "follow",
        "freeze",
        "block",
        "pin",
        "mount",
        "pack",
        "zip",
        "link",
        "mute",
        "do",
        "tie",
        "plug",
        "load",
        "wrap",
        "stop",
        "archive",
        "ban",
        "hide",
        "friend",
        "register",
    }
)

# Actions and the words that undo them on their own: "unhide", "thaw" (inference/pair_undoing.py).
# Left out: "show" ("show me how to hide columns" asks how to hide them), and actions more
# often read as nouns or adjectives ("a zip file", "close to the vote"). "remove" is undone
# only by putting back.
UNDOING: dict[str, tuple[str, ...]] = {
    "freeze": ("thaw", "unfreeze", "defrost"),
    "hide": ("unhide", "reveal"),
    "disable": ("reenable", "reactivate"),
    "deactivate": ("reactivate",),
    "delete": ("undelete",),
    "cancel": ("reactivate", "reinstate"),
    "archive": ("unarchive",),
    "suspend": ("unsuspend", "reinstate"),
    "pause": ("unpause",),
    "mute": ("unmute",),
    "lock": ("unlock",),
    "block": ("unblock",),
    "ban": ("unban",),
    "pin": ("unpin",),
    "protect": ("unprotect",),
    "encrypt": ("decrypt",),
    "install": ("uninstall",),
    "subscribe": ("unsubscribe",),
    "follow": ("unfollow",),
    "mount": ("unmount",),
    "remove": (),
}
# Words that undo an action only where the request names the action too ("lift the freeze",
# "restore a deactivated account", "retrieve deleted emails"): alone they mean other things
# ("lift weights", "restore factory settings").
UNDOING_NAMED: dict[str, tuple[str, ...]] = {
    "freeze": ("lift", "remove", "delete"),
    "ban": ("lift", "remove"),
    "block": ("lift", "remove"),
    "lock": ("remove", "bypass"),  # "remove the iCloud lock" = "unlock iCloud"
    "suspend": ("lift",),
    "disable": ("enable", "activate"),
    "deactivate": ("activate", "enable", "restore", "recover"),
    "delete": ("restore", "recover", "retrieve"),
    "cancel": ("restore", "resume"),
    "archive": ("restore",),
}
# Forms the inflection rules cannot make: "a frozen account", "hidden columns".
IRREGULAR_STATES: dict[str, tuple[str, ...]] = {"freeze": ("frozen", "froze"), "hide": ("hidden", "hid")}

# Words that tie two things in an order: "from A to B", "A into B", "A than B".
DIRECTION_WORDS: frozenset[str] = frozenset(
    {"to", "into", "from", "than", "toward", "towards", "onto", "->", "→", "over", "before", "after"}
)

# Units by kind; two different units of one kind mean different answers. Time units count
# only next to a number ("30 minutes" / "30 hours"): "30 minute run" = "half an hour".
# A word may sit in more than one kind ("pound").
# fmt: off
UNIT_KINDS: dict[str, tuple[str, ...]] = {
    "length": ("km", "kilometer", "kilometre", "mile", "meter", "metre", "m", "cm", "centimeter",
               "centimetre", "mm", "millimeter", "inch", "foot", "feet", "ft", "yard", "yd"),
    "mass": ("kg", "kilogram", "kilo", "gram", "g", "mg", "milligram", "pound", "lb", "lbs", "ounce",
             "oz", "ton", "tonne", "stone"),
    "volume": ("liter", "litre", "l", "ml", "milliliter", "millilitre", "gallon", "quart", "pint",
               "cup", "tablespoon", "tbsp", "teaspoon", "tsp"),
    "temperature": ("celsius", "fahrenheit", "kelvin"),
    "time": ("minute", "hour", "day", "week", "month", "year"),
    "data": ("bit", "byte", "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib", "kilobyte",
             "megabyte", "gigabyte", "terabyte"),
    "rate": ("bps", "kbps", "mbps", "gbps", "mb/s", "gb/s", "kb/s"),
    "currency": ("usd", "dollar", "eur", "euro", "gbp", "pound", "sterling", "jpy", "yen", "cny", "yuan",
                 "rmb", "inr", "rupee", "chf", "franc", "cad", "aud", "mxn", "peso", "krona", "krone",
                 "bitcoin", "btc"),
    "speed": ("mph", "kph", "km/h", "knot"),
    "energy": ("calorie", "kcal", "kilojoule", "kj", "joule", "kwh"),
    "power": ("watt", "kw", "horsepower", "hp"),
    "weekday": ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    "relative day": ("today", "tonight", "tomorrow", "yesterday"),
}
# fmt: on

# Spellings of one currency or unit that are the same thing.
UNIT_ALIASES: dict[str, str] = {
    "hourly": "hour",
    "daily": "day",
    "weekly": "week",
    "monthly": "month",
    "yearly": "year",
    "annual": "year",
    "annually": "year",
    "$": "usd",
    "dollar": "usd",
    "buck": "usd",
    "€": "eur",
    "euro": "eur",
    "£": "gbp",
    "sterling": "gbp",
    "¥": "jpy",
    "yen": "jpy",
    "yuan": "cny",
    "rmb": "cny",
    "rupee": "inr",
    "kilometre": "km",
    "kilometer": "km",
    "metre": "m",
    "meter": "m",
    "centimetre": "cm",
    "centimeter": "cm",
    "millimeter": "mm",
    "foot": "ft",
    "feet": "ft",
    "yard": "yd",
    "kilogram": "kg",
    "kilo": "kg",
    "gram": "g",
    "milligram": "mg",
    "lb": "pound",
    "lbs": "pound",
    "ounce": "oz",
    "tonne": "ton",
    "litre": "l",
    "liter": "l",
    "milliliter": "ml",
    "millilitre": "ml",
    "tablespoon": "tbsp",
    "teaspoon": "tsp",
    "kilobyte": "kb",
    "megabyte": "mb",
    "gigabyte": "gb",
    "terabyte": "tb",
    "kph": "km/h",
    "kcal": "calorie",
    "btc": "bitcoin",
    "hp": "horsepower",
    "kilojoule": "kj",
}

# fmt: off
NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
# Ordinals by the position they name: "the second man on the moon" = "the 2nd man".
ORDINAL_WORDS: dict[str, int] = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30, "fortieth": 40, "fiftieth": 50,
    "sixtieth": 60, "seventieth": 70, "eightieth": 80, "ninetieth": 90, "hundredth": 100,
}
# fmt: on
SCALE_WORDS: dict[str, int] = {
    "hundred": 100,
    "thousand": 1_000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
}
# Written onto a number: 25k, 3bn ("5m" is left alone: metres or millions).
SCALE_SUFFIXES: dict[str, int] = {"k": 1_000, "bn": 1_000_000_000}

# fmt: off
MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
# fmt: on
