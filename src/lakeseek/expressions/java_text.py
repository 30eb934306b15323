"""Text as Java's parsers read it, which Spark calls to type and read text (CSV values,
partition directory names): ``Integer.parseInt`` / ``Long.parseLong``, ``new
BigDecimal(String)``, ``Double.parseDouble`` and ``ZoneId.of``."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lakeseek.exceptions import LakeseekError

# Python's \d is any script's decimal digit, as Java's Character.isDigit.
JAVA_INTEGER = re.compile(r"[+-]?\d+")
# Groups: sign, whole digits, their fraction digits, fraction digits alone (".5"), exponent.
BIG_DECIMAL = re.compile(r"([+-]?)(?:(\d+)\.?(\d*)|\.(\d+))(?:[eE]([+-]?\d+))?")
# Double.parseDouble's text once trimmed: ASCII digits only, a type suffix after a number (a
# pattern both Python's and Arrow's regular expressions take).
JAVA_DOUBLE_PATTERN = (
    r"[+-]?(NaN|Infinity|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)"
)
_JAVA_DOUBLE = re.compile(JAVA_DOUBLE_PATTERN)
# What Java's String.trim removes: every character up to the space (Spark's casts of a string to
# DOUBLE and DECIMAL trim so).
JAVA_BLANKS = "".join(map(chr, range(33)))
# What Spark's UTF8String.trimAll removes, before a string is cast to an integer, a boolean, a
# date or a timestamp: those and DEL (no other script's spaces).
SPARK_BLANKS = JAVA_BLANKS + "\x7f"


def java_double(text: str) -> float | None:
    """``Double.parseDouble(text)``; None where Java refuses the text."""
    trimmed = text.strip(JAVA_BLANKS)
    match = _JAVA_DOUBLE.fullmatch(trimmed)
    if match is None:
        return None
    body = trimmed if match.group(1) in ("NaN", "Infinity") else trimmed.rstrip("fFdD")
    if "x" in body or "X" in body:
        return float.fromhex(body)
    return float(body)


# java.time.ZoneId.SHORT_IDS, which Spark's session time zone accepts.
SHORT_IDS = {
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo",
    "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo",
    "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare",
    "CNT": "America/St_Johns",
    "CST": "America/Chicago",
    "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa",
    "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00",
    "MST": "-07:00",
    "HST": "-10:00",
}
_OFFSET = re.compile(
    r"(?:UTC|GMT|UT)?(?P<sign>[+-])(?P<hours>\d{1,2})(?::?(?P<minutes>\d{2}))?(?::?(?P<seconds>\d{2}))?"
)


@lru_cache(maxsize=64)
def time_zone_of(name: str) -> dt.tzinfo:
    """A Spark session time zone ID (a region, ``UTC``, ``+05:00``, ``GMT+8``, ``PST``) as a tzinfo."""
    text = SHORT_IDS.get(name, name)
    if text in ("Z", "UTC", "GMT", "UT"):
        return dt.timezone.utc
    try:
        seconds = zone_offset(text)
    except ValueError as error:
        raise LakeseekError(f"unknown time zone {name!r}: {error}") from error
    if seconds is not None:
        return dt.timezone(dt.timedelta(seconds=seconds))
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise LakeseekError(f"unknown time zone {name!r}") from error


def zone_offset(text: str) -> int | None:
    """The seconds east of UTC of an offset zone id (``+8``, ``-05:30``, ``GMT+8``, ``UTC+0800``);
    None for any other text; ValueError past Java's ±18:00."""
    offset = _OFFSET.fullmatch(text)
    if offset is None:
        return None
    hours, minutes, seconds = (int(offset[part] or 0) for part in ("hours", "minutes", "seconds"))
    if hours > 18 or minutes > 59 or seconds > 59 or hours * 3600 + minutes * 60 + seconds > 18 * 3600:
        raise ValueError(f"the offset {text!r} is past Java's ±18:00")
    total = hours * 3600 + minutes * 60 + seconds
    return -total if offset["sign"] == "-" else total
