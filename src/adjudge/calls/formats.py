"""The formats a contract can assert (JSON Schema 2020-12's format-assertion vocabulary).

In JSON Schema 2020-12 ``format`` is an annotation unless the format-assertion vocabulary is
in force. A contract opts in with ``"format_assertion": true``; its schema stage then asserts
every ``format`` it uses, and registration refuses a format not in :data:`FORMATS` (2020-12,
7.2.3: an implementation asserting formats must fail on one it does not know).

Each checker takes a string and is truthy when it is in the format; a value that is not a string
is not judged by ``format`` at all (the caller skips it). Every grammar below is the RFC's ABNF
written out with ASCII classes (``[0-9]``, never ``\\d``) and anchored at the very end (``\\Z``,
never ``$``), so a trailing newline or a non-ASCII digit is never accepted:

- ``date-time``, ``date``, ``time``: RFC 3339 section 5.6 (``T`` and ``Z`` in either case, a
  day the month has, a leap second only where it is 23:59:60 in UTC); ``duration``: RFC 3339
  appendix A;
- ``email``: RFC 5321 section 4.1.2 ``Mailbox`` (dot-string or quoted local part, a domain or an
  IPv4 / IPv6 address literal);
- ``ipv4``: the dotted quad without leading zeros; ``ipv6``: RFC 4291 section 2.2 text forms
  (no zone, no brackets);
- ``uri``, ``uri-reference``: RFC 3986 ``URI`` and ``URI-reference`` (ASCII only; an
  internationalized address must be percent-encoded);
- ``uuid``: RFC 9562 hexadecimal form with hyphens;
- ``regex``: an ECMA-262 regular expression under the u flag.

Pure: no IO, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

from adjudge.calls._ecma import PatternError, compile_uncached

__all__ = ["FORMATS", "parse_date_time"]

# ----------------------------------------------------------------------------- RFC 3339

_DATE = r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
_TIME = (
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})(?P<fraction>\.[0-9]+)?"
    r"(?P<offset>[Zz]|(?P<sign>[+-])(?P<oh>[0-9]{2}):(?P<om>[0-9]{2}))"
)
_DATE_TIME_RE = re.compile(_DATE + r"[Tt]" + _TIME + r"\Z")
_DATE_RE = re.compile(_DATE + r"\Z")
_TIME_RE = re.compile(_TIME + r"\Z")
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _valid_date(match: re.Match[str]) -> bool:
    year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
    if not 1 <= month <= 12 or day < 1 or day > _DAYS[month - 1]:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return not (month == 2 and day == 29 and not leap)


def _valid_time(match: re.Match[str]) -> bool:
    hour, minute, second = int(match["hour"]), int(match["minute"]), int(match["second"])
    if hour > 23 or minute > 59 or second > 60:
        return False
    if match["sign"] is not None and (int(match["oh"]) > 23 or int(match["om"]) > 59):
        return False
    if second == 60:  # a leap second is inserted at 23:59:60 UTC, nowhere else
        return _utc_minutes(match) == 23 * 60 + 59
    return True


def _utc_minutes(match: re.Match[str]) -> int:
    minutes = int(match["hour"]) * 60 + int(match["minute"])
    if match["sign"] is not None:
        offset = int(match["oh"]) * 60 + int(match["om"])
        minutes -= offset if match["sign"] == "+" else -offset
    return minutes % (24 * 60)


# The common case in one pass: every field in range, a day no month lacks (01-28), no leap
# second. Whatever it refuses is read by the full grammar above.
_DATE_TIME_COMMON = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:"
    r"[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])\Z"
)


def _is_date_time(text: str) -> bool:
    if _DATE_TIME_COMMON.match(text) is not None:
        return True
    match = _DATE_TIME_RE.match(text)
    return match is not None and _valid_date(match) and _valid_time(match)


def _is_date(text: str) -> bool:
    match = _DATE_RE.match(text)
    return match is not None and _valid_date(match)


def _is_time(text: str) -> bool:
    match = _TIME_RE.match(text)
    return match is not None and _valid_time(match)


def parse_date_time(text: str) -> datetime | None:
    """An RFC 3339 ``date-time`` as an aware datetime, or None if ``text`` is not one.

    A leap second (``23:59:60Z``) is read as the first instant of the next minute; digits of a
    fraction past the sixth (microseconds) are dropped.
    """
    match = _DATE_TIME_RE.match(text)
    if match is None or not _valid_date(match) or not _valid_time(match):
        return None
    offset = timedelta(0)
    if match["sign"] is not None:
        offset = timedelta(hours=int(match["oh"]), minutes=int(match["om"]))
        if match["sign"] == "-":
            offset = -offset
    fraction = match["fraction"]
    second = int(match["second"])
    stamp = datetime(
        int(match["year"]),
        int(match["month"]),
        int(match["day"]),
        int(match["hour"]),
        int(match["minute"]),
        min(second, 59),
        int((fraction[1:] + "000000")[:6]) if fraction else 0,
        tzinfo=UTC if not offset else timezone(offset),
    )
    return stamp + timedelta(seconds=1) if second == 60 else stamp


_DURATION_TIME = r"T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DURATION_RE = re.compile(
    r"P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)"
    rf"(?:{_DURATION_TIME})?|{_DURATION_TIME}|[0-9]+W)\Z",
    re.IGNORECASE,  # ABNF quoted letters are case-insensitive (RFC 5234, 2.3)
)

# ----------------------------------------------------------------------------- addresses

_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = (
    "(?:"
    rf"(?:{_H16}:){{6}}{_LS32}"
    rf"|::(?:{_H16}:){{5}}{_LS32}"
    rf"|(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}"
    rf"|(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}"
    rf"|(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}"
    rf"|(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}"
    rf"|(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}"
    rf"|(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}"
    rf"|(?:(?:{_H16}:){{0,6}}{_H16})?::"
    ")"
)
_IPV4_RE = re.compile(_IPV4 + r"\Z")
_IPV6_RE = re.compile(_IPV6 + r"\Z")

# RFC 5321, 4.1.2 and 4.1.3.
_ATOM = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+"
_LOCAL = rf'(?:{_ATOM}(?:\.{_ATOM})*|"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*")'
_SUB_DOMAIN = r"[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?"
_DOMAIN = rf"{_SUB_DOMAIN}(?:\.{_SUB_DOMAIN})*"
_MAILBOX_RE = re.compile(
    rf"(?P<local>{_LOCAL})@(?P<domain>{_DOMAIN}|\[(?:{_IPV4}|IPv6:{_IPV6})\])\Z"
)
# Length limits of RFC 5321, 4.5.3.1: a local part of at most 64 octets, a domain of 255.
_LOCAL_MAX, _DOMAIN_MAX = 64, 255

# ----------------------------------------------------------------------------- RFC 3986

# "%" is let into the character classes and every "%" is then checked to start a pct-encoded
# octet (``_BAD_PCT``): the grammar allows pct-encoded exactly where it allows these classes
# (userinfo, reg-name, path, query, fragment), and one class per run keeps the match fast
# (measured: about twice as fast as an alternation per character, and than unrolled loops).
_UNRESERVED = r"A-Za-z0-9\-._~%"
_SUB_DELIMS = r"!$&'()*+,;="
_PCHAR = rf"[{_UNRESERVED}{_SUB_DELIMS}:@]"
_SEGMENT = rf"{_PCHAR}*"
_SEGMENT_NZ = rf"{_PCHAR}+"
_SEGMENT_NZ_NC = rf"[{_UNRESERVED}{_SUB_DELIMS}@]+"
_USERINFO = rf"[{_UNRESERVED}{_SUB_DELIMS}:]*"
_REG_NAME = rf"[{_UNRESERVED}{_SUB_DELIMS}]*"
_IP_LITERAL = rf"\[(?:{_IPV6}|v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~{_SUB_DELIMS}:]+)\]"
_AUTHORITY = rf"(?:{_USERINFO}@)?(?:{_IP_LITERAL}|{_REG_NAME})(?::[0-9]*)?"
_PATH_ABEMPTY = rf"(?:/{_SEGMENT})*"
_PATH_ABSOLUTE = rf"/(?:{_SEGMENT_NZ}(?:/{_SEGMENT})*)?"
_QUERY = rf"[{_UNRESERVED}{_SUB_DELIMS}:@/?]*"
_QUERY_FRAGMENT = rf"(?:\?{_QUERY})?(?:#{_QUERY})?"
_BAD_PCT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_URI_RE = re.compile(
    rf"[A-Za-z][A-Za-z0-9+\-.]*:"
    rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_SEGMENT_NZ}(?:/{_SEGMENT})*|)"
    rf"{_QUERY_FRAGMENT}\Z"
)
_RELATIVE_RE = re.compile(
    rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_SEGMENT_NZ_NC}(?:/{_SEGMENT})*|)"
    rf"{_QUERY_FRAGMENT}\Z"
)

_UUID_RE = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z"
)


def _is_email(text: str) -> bool:
    match = _MAILBOX_RE.match(text)
    if match is None:
        return False
    return len(match["local"]) <= _LOCAL_MAX and len(match["domain"]) <= _DOMAIN_MAX


def _is_uri(text: str) -> bool:
    if _URI_RE.match(text) is None:
        return False
    return "%" not in text or _BAD_PCT.search(text) is None


def _is_uri_reference(text: str) -> bool:
    if _URI_RE.match(text) is None and _RELATIVE_RE.match(text) is None:
        return False
    return "%" not in text or _BAD_PCT.search(text) is None


def _is_regex(text: str) -> bool:
    # Compiled uncached: the text is the answer's own, and the contract's patterns' cache
    # would keep up to 4,096 of them, megabytes each, for good.
    try:
        compile_uncached(text)
    except PatternError:
        return False
    return True


#: The format table: name -> a function of a string, truthy when it is in that format. A format
#: that is one regular expression is its bound ``match``, so judging a value costs no Python
#: frame.
FORMATS: Final[Mapping[str, Callable[[str], object]]] = {
    "date-time": _is_date_time,
    "date": _is_date,
    "time": _is_time,
    "duration": _DURATION_RE.match,
    "email": _is_email,
    "ipv4": _IPV4_RE.match,
    "ipv6": _IPV6_RE.match,
    "uri": _is_uri,
    "uri-reference": _is_uri_reference,
    "uuid": _UUID_RE.match,
    "regex": _is_regex,
}
