"""The demo's sample workload: three fixed days of requests, written as landing files.

Texts are the project's own. Each day draws requests Zipf-like from a fixed set of
intents and questions, worded canonically most of the time and paraphrased the
rest, across three tenants; a few rows per day are malformed on purpose so the
quarantine shows, and one prompt is too long for the tiny model so a failure shows.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

DEMO_DAYS = ("2026-01-05", "2026-01-06", "2026-01-07")
DEMO_TENANTS = ("acme", "globex", "initech")
DEMO_NAMESPACES = ("demo-support-intents", "demo-faq-answers", "demo-contracts")
REQUESTS_PER_DAY = 240
PARAPHRASE_SHARE = 0.3

SYSTEM_PROMPT = (
    "You are the support assistant of an online shop. Answer in one short, friendly "
    "sentence. If you do not know, say so and offer to connect a human agent.\n\n"
    "Question: "
)

# Each entry: the canonical wording first, then paraphrases with the same answer.
SUPPORT_MESSAGES = [
    [
        "I was charged twice for my last order",
        "my card was charged two times for the last order",
        "I see a double charge for my most recent order",
    ],
    ["Where is my package?", "where is my parcel right now?", "Where's my package at?"],
    [
        "I cannot log in to my account",
        "I can't log into my account",
        "I am unable to log in to my account",
    ],
    [
        "How do I return a damaged item?",
        "how can I return an item that arrived damaged?",
        "How do I send back a damaged item?",
    ],
    [
        "The app crashes when I open it",
        "the app crashes every time I open it",
        "the app keeps crashing when I open it",
    ],
    ["Can I get a refund for a late delivery?", "can I be refunded for a delivery that came late?"],
    ["My invoice shows the wrong address", "the address on my invoice is wrong"],
    ["I forgot my password", "I forgot my account password"],
    ["The checkout page shows an error", "I get an error on the checkout page"],
    ["How long does shipping to Canada take?", "how many days does shipping to Canada take?"],
    ["Please update my billing details", "I want to update my billing details"],
    ["The tracking number does not work", "my tracking number is not working"],
]

FAQ_QUESTIONS = [
    ["How do I reset my password?", "How can I reset my password?", "how do I reset my password"],
    ["What are your opening hours?", "What are your business hours?", "When are you open?"],
    [
        "Do you ship internationally?",
        "Do you ship to other countries?",
        "Do you offer international shipping?",
    ],
    ["How do I cancel my order?", "How can I cancel my order?", "how do i cancel an order"],
    ["Can I change my delivery address?", "Can I change the delivery address of my order?"],
    ["What payment methods do you accept?", "Which payment methods do you accept?"],
    ["How do I contact customer service?", "How can I contact customer service?"],
    ["Is there a warranty on electronics?", "Do electronics come with a warranty?"],
    ["How do I apply a discount code?", "How can I apply a discount code?"],
    ["Can I buy a gift card?", "Can I purchase a gift card?"],
    ["How do I delete my account?", "How can I delete my account?"],
    ["Why was my payment declined?", "Why did my payment get declined?"],
    ["Do you have a loyalty program?", "Is there a loyalty program?"],
    ["How do I track my order?", "How can I track my order?"],
]

CONTRACT_CLAUSES = [
    ["The supplier shall be liable for all direct damages."],
    ["The supplier shall not be liable for indirect damages."],
    ["Either party may terminate this agreement with thirty days written notice."],
    ["Invoices are payable within thirty days of receipt."],
    ["Invoices are payable within sixty days of receipt."],
    ["The recipient shall keep all confidential information secret for five years."],
]

STREAMS = (
    # (namespace, model, texts, prefix, params, share of a day's requests)
    ("demo-support-intents", "intent-classifier", SUPPORT_MESSAGES, "", {}, 0.45),
    (
        "demo-faq-answers",
        "tiny-llm",
        FAQ_QUESTIONS,
        SYSTEM_PROMPT,
        {"temperature": 0.0, "max_new_tokens": 24},
        0.45,
    ),
    (
        "demo-contracts",
        "intent-classifier",
        CONTRACT_CLAUSES,
        "",
        {"labels": ["liability", "termination", "payment terms", "confidentiality"]},
        0.10,
    ),
)


def _zipf_choice(rng: random.Random, count: int) -> int:
    weights = [1.0 / (rank + 1) ** 1.1 for rank in range(count)]
    return rng.choices(range(count), weights=weights)[0]


def day_requests(day: str) -> list[dict]:
    """The day's rows, deterministic for the day (its seed is the date)."""
    rng = random.Random(day)
    start = datetime.fromisoformat(day)
    rows: list[dict] = []
    for number in range(REQUESTS_PER_DAY):
        namespace, model, texts, prefix, params, _ = rng.choices(STREAMS, weights=[s[-1] for s in STREAMS])[0]
        wordings = texts[_zipf_choice(rng, len(texts))]
        paraphrase = len(wordings) > 1 and rng.random() < PARAPHRASE_SHARE
        text = rng.choice(wordings[1:]) if paraphrase else wordings[0]
        rows.append(
            {
                "request_id": f"{day}-{number:05d}",
                "tenant": rng.choice(DEMO_TENANTS),
                "namespace": namespace,
                "model": model,
                "params": params,
                "prefix": prefix,
                "input": text,
                "submitted_at": (start + timedelta(seconds=number * 300)).isoformat(),
            }
        )
    rows.extend(_bad_rows(day))
    return rows


def _bad_rows(day: str) -> list[dict]:
    base = {"tenant": "acme", "namespace": "demo-faq-answers", "model": "tiny-llm", "params": {}}
    return [
        {**base, "request_id": f"{day}-bad-empty", "input": "   "},
        {**base, "request_id": f"{day}-bad-model", "model": "gpt-imaginary", "input": "hello"},
        {**base, "request_id": f"{day}-00000", "input": "a second row with a taken id"},
        {**base, "request_id": f"{day}-bad-params", "params": "[1, 2]", "input": "hi"},
        {**base, "request_id": f"{day}-bad-nan", "params": '{"temperature": NaN}', "input": "hi"},
        {**base, "request_id": f"{day}-no-tenant", "tenant": "", "input": "hello"},
        # Longer than the tiny model's context: answered with path "failed", never cached.
        {
            **base,
            "request_id": f"{day}-too-long",
            "prefix": SYSTEM_PROMPT,
            "input": "Please summarise: " + "lorem ipsum dolor sit amet " * 45,
        },
    ]


def write_landing(landing_root: Path, days: tuple[str, ...] = DEMO_DAYS) -> list[Path]:
    """Write each day's rows to `landing_root/DAY/requests.jsonl`, replacing earlier ones."""
    written = []
    for day in days:
        folder = landing_root / day
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "requests.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in day_requests(day)))
        written.append(path)
    return written
