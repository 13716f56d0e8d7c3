"""The secrets a fact never holds (engine/sensitive.py), and what is not one."""

from __future__ import annotations

import pytest

from memhub.engine.sensitive import secret_in


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("The user's card number is 4111 1111 1111 1111.", "card number"),
        ("Card: 5500-0000-0000-0004, expires 2027.", "card number"),
        ("The user pays with 378282246310005.", "card number"),
        ("The user's IBAN is DE89 3704 0044 0532 0130 00.", "IBAN"),
        ("The user's SSN is 078-05-1120.", "social security number"),
        ("The user's wifi password is tangerine42.", "credential"),
        ("Her PIN: 4321.", "credential"),
        ("The user's api key = sk-live-abc123", "credential"),
        ("Das Passwort ist Sonne2024.", "credential"),
    ],
)
def test_secrets_are_named(text: str, kind: str | None) -> None:
    assert secret_in(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "The user was born on 1990-04-12 and moved on 2023-05-08.",
        "The user's phone number is +44 20 7946 0958.",  # 12 digits: no card
        "The user ran 4111 metres; the race was 1111 1111 1111 1112 steps.",  # Luhn fails
        "The user forgot their password last week.",  # a password named, none given
        "The user's flight is LH 1234 on 2024-06-01.",
        "The user lives at 221B Baker Street.",
    ],
)
def test_ordinary_facts_hold_no_secret(text: str) -> None:
    assert secret_in(text) is None
