"""Secrets a fact must never hold: payment card numbers, bank account numbers, passwords.

A model told "never store card numbers or passwords" still wrote "The user's card number is
4111 1111 1111 1111." (issue 35's held-out run), so the rule is kept here, deterministically,
rather than in the prompt alone. The user's own turn stays what it is (an episode is the
transcript, and the user's to erase); what is refused is a *fact* made of it, which search
would put in front of every later prompt.
"""

from __future__ import annotations

import re

__all__ = ["secret_in"]

# 13-19 digits, in groups separated by single spaces or dashes (card numbers as people type
# them), checked with the Luhn sum so that phone numbers and dates rarely match.
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
# An IBAN: country code, check digits, then 11-30 letters and digits (spaces allowed).
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
# A US social security number.
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
# A credential named and given: "password is hunter2", "PIN: 4321", "api key = sk-...". A
# refused fact costs little (the turn stays an episode), so "the password is secure" may go.
_CREDENTIAL = re.compile(
    r"\b(?:password|passcode|passwort|contrase[nñ]a|mot de passe|pin(?: code)?|api[ -]?key"
    r"|secret key|access token)\b\s*(?:is|was|=|:|ist|es|est)\s*[\"'`]?[^\s\"'`.,;]{3,}",
    re.IGNORECASE,
)


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def secret_in(text: str) -> str | None:
    """What kind of secret ``text`` holds ("card number", "IBAN", ...), or None."""
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if _luhn(digits):
            return "card number"
    if _IBAN.search(text):
        return "IBAN"
    if _SSN.search(text):
        return "social security number"
    if _CREDENTIAL.search(text):
        return "credential"
    return None
