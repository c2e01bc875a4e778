"""The system prompt and the date sentence in each language Parley offers (desktop.languages), translated by
hand: a model answers in the language it is spoken to in the prompt far more reliably than when told to in
another. "detect" keeps the English prompt and asks for an answer in the person's language."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

PROMPTS = {
    "en": "You are Parley, a friendly voice companion. Answer in one to three short spoken sentences. "
    "No lists, no markdown, no emoji.",
    "de": "Du bist Parley, ein freundlicher Sprachbegleiter. Antworte auf Deutsch in ein bis drei kurzen "
    "gesprochenen Sätzen. Keine Listen, kein Markdown, keine Emojis.",
    "fr": "Tu es Parley, un compagnon vocal bienveillant. Réponds en français, en une à trois phrases courtes "
    "faites pour être dites à voix haute. Pas de listes, pas de markdown, pas d'emoji.",
    "es": "Eres Parley, un compañero de voz amable. Responde en español, en una a tres frases cortas para decir "
    "en voz alta. Sin listas, sin markdown, sin emojis.",
    "it": "Sei Parley, un compagno vocale gentile. Rispondi in italiano, con una, due o tre frasi brevi da dire "
    "ad alta voce. Niente elenchi, niente markdown, niente emoji.",
}
DETECTED = " Answer in the language the person speaks to you in."

_DAYS = {
    "en": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
    "de": "Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonntag",
    "fr": "lundi mardi mercredi jeudi vendredi samedi dimanche",
    "es": "lunes martes miércoles jueves viernes sábado domingo",
    "it": "lunedì martedì mercoledì giovedì venerdì sabato domenica",
}
_MONTHS = {
    "en": "January February March April May June July August September October November December",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
}


def _en(day: str, month: str, now: dt.datetime, zone: str) -> str:
    time = f"{now.hour % 12 or 12}:{now:%M} {'AM' if now.hour < 12 else 'PM'}"
    return f"Today is {day}, {now.day} {month} {now.year}. The time is {time} ({zone})."


def _de(day: str, month: str, now: dt.datetime, zone: str) -> str:
    return f"Heute ist {day}, der {now.day}. {month} {now.year}. Es ist {now.hour}:{now:%M} Uhr ({zone})."


def _fr(day: str, month: str, now: dt.datetime, zone: str) -> str:
    date = "1er" if now.day == 1 else str(now.day)
    return f"Nous sommes le {day} {date} {month} {now.year}. Il est {now.hour} h {now:%M} ({zone})."


def _es(day: str, month: str, now: dt.datetime, zone: str) -> str:
    time = f"Es la 1:{now:%M}" if now.hour == 1 else f"Son las {now.hour}:{now:%M}"
    return f"Hoy es {day}, {now.day} de {month} de {now.year}. {time} ({zone})."


def _it(day: str, month: str, now: dt.datetime, zone: str) -> str:
    date = "1º" if now.day == 1 else str(now.day)
    time = f"È l'una e {now:%M}" if now.hour == 1 else f"Sono le {now.hour}:{now:%M}"
    return f"Oggi è {day} {date} {month} {now.year}. {time} ({zone})."


_SENTENCES: dict[str, Callable[[str, str, dt.datetime, str], str]] = {
    "en": _en, "de": _de, "fr": _fr, "es": _es, "it": _it,
}  # fmt: skip


def system_prompt(language: str) -> str:
    """The default system prompt in `language` ("detect", or a code without a translation: English, asking for an
    answer in the person's language)."""
    return PROMPTS.get(language) or PROMPTS["en"] + DETECTED


def date_sentence(now: dt.datetime, zone: str, language: str) -> str:
    """Today's date and the time in `language` (English for "detect" or a language without a translation)."""
    code = language if language in _SENTENCES else "en"
    day, month = _DAYS[code].split()[now.weekday()], _MONTHS[code].split()[now.month - 1]
    return _SENTENCES[code](day, month, now, zone)
