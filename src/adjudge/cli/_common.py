"""What the client commands share: where the service is, who is calling, ``--json`` in every
position, and how a refusal is printed.

``--json`` is accepted before the command group (``adjudge --json task show ID``), after it
(``adjudge task --json show ID``) and after the command (``adjudge task show ID --json``); each
place sets one flag in the Click context's ``meta``, which every nested context shares.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from adjudge.errors import BadInput
from adjudge.json_text import finite_float, no_constant, unique_keys
from adjudge.numerals import read_decimal, read_whole

if TYPE_CHECKING:
    from adjudge.client import Client

T = TypeVar("T")

#: Where the ``--json`` flag is kept for the whole command line.
JSON_KEY = "adjudge.json"
#: The currency amounts are in, and its decimals (2000000 minor units are 2 USDC).
CURRENCY = "USDC"
DECIMALS = 6

#: Exit codes of the client commands: done, refused by the service, bad input or no service.
EXIT_OK, EXIT_REFUSED, EXIT_BAD_INPUT = 0, 1, 2

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print the service's JSON answer instead of text.")
]
UrlOption = Annotated[
    str,
    typer.Option(envvar="ADJUDGE_URL", metavar="URL", help="The service's base URL."),
]
KeyOption = Annotated[
    str | None,
    typer.Option(envvar="ADJUDGE_API_KEY", metavar="KEY", help="Your API key."),
]
#: The key of a state change that moves money: a retry with it (after an answer lost, say) is
#: answered as the first was, never done twice.
IdemKeyOption = Annotated[
    str | None,
    typer.Option(
        metavar="KEY",
        help="Your key for this request: sent again with it (the one a lost answer printed), "
        "it is answered as it was, never done twice.",
    ),
]
DEFAULT_URL = "http://127.0.0.1:8000"


def remember_json(ctx: typer.Context, flag: bool) -> None:
    """Record a ``--json`` seen at this level for every command below it."""
    if flag:
        ctx.meta[JSON_KEY] = True


def wants_json(ctx: typer.Context, flag: bool = False) -> bool:
    """Whether ``--json`` was given anywhere on the command line."""
    return flag or bool(ctx.meta.get(JSON_KEY))


def print_json(value: Any) -> None:
    """The answer as the service sent it, indented."""
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def format_amount(minor: object, decimals: int = DECIMALS) -> str:
    """Minor units ("2000000") as a decimal amount ("2"), exactly (no floating point)."""
    digits = str(minor)
    negative = digits.startswith("-")
    digits = digits.removeprefix("-")
    if not digits.isdigit():
        return str(minor)
    if decimals <= 0:  # a currency without decimals: the minor unit is the unit
        return ("-" if negative else "") + (digits.lstrip("0") or "0")
    padded = digits.rjust(decimals + 1, "0")
    whole = padded[:-decimals].lstrip("0") or "0"
    fraction = padded[-decimals:].rstrip("0")
    return ("-" if negative else "") + whole + ("." + fraction if fraction else "")


def _decimals(currency: str) -> int:
    # Imported here: the calls package costs a quarter second that a command printing no
    # amount should not pay at start.
    from adjudge.calls.tools import DECIMALS  # noqa: PLC0415

    return DECIMALS.get(currency, 0)


def money(minor: object, currency: str = CURRENCY) -> str:
    """An amount in minor units as people read it, in its currency with its decimals:
    ``2000000`` USDC is "2 USDC", ``25`` USD is "0.25 USD" (an unlisted currency has none).
    Every amount a person reads goes through here; ``--json`` keeps the minor units."""
    return f"{format_amount(minor, _decimals(currency))} {currency}"


#: A whole number typed with neither a currency nor a decimal point is read in units up to this
#: many. Above it, ``--reward 2000000`` may be 2,000,000 USDC or, as rewards were once typed,
#: 2000000 minor units (2 USDC): the command is refused, naming both readings, until the person
#: writes which (``"2000000 USDC"``, ``2000000.0``, or ``--reward-minor 2000000``).
PLAIN_UNITS_MOST = 1000


def amount_of(
    text: str, currency: str, flag: str, *, plain_most: int | None = None, minor_flag: str = ""
) -> int:
    """``"2.5"`` or ``"2.5 USDC"`` as integer minor units of ``currency``, exactly.

    Refusals (:class:`adjudge.errors.BadInput`): ``INVALID_AMOUNT`` (not a number, negative, or
    another currency), ``AMOUNT_TOO_PRECISE`` (more decimals than the currency has: never
    rounded), ``AMOUNT_AMBIGUOUS`` (a bare whole number above ``plain_most``, which an old
    command may have meant in minor units; ``None`` accepts any).
    """
    decimals = _decimals(currency)
    parts = text.split()
    named = len(parts) == 2  # an amount and its currency
    if not parts or len(parts) > 2 or (named and parts[1].upper() != currency.upper()):
        why = (
            f"amounts here are in {currency}"
            if named
            else f"write an amount in {currency}, like 2.5 or '2.5 {currency}'"
        )
        raise BadInput(f"{flag} {text!r}: {why}.", code="INVALID_AMOUNT")
    digits = parts[0]
    try:
        value = Decimal(digits) if _DIGITS.fullmatch(digits) else None
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        value = None
    if value is None:
        raise BadInput(
            f"{flag} {text!r}: {currency} amounts are 0 or more, written like 2.5 or "
            f"'2.5 {currency}'.",
            code="INVALID_AMOUNT",
        )
    minor = value.scaleb(decimals)
    if minor != minor.to_integral_value():
        places = -int(value.normalize().as_tuple().exponent)
        raise BadInput(
            f"{flag} {text!r}: {currency} amounts are 0 or more, {decimals} decimals at most "
            f"(this has {places}); nothing is rounded.",
            code="AMOUNT_TOO_PRECISE",
        )
    if plain_most is not None and not named and "." not in digits and value > plain_most:
        as_minor = f"{format_amount(digits, decimals)} {currency}"
        raise BadInput(
            f"{flag} {digits} is ambiguous: {digits} {currency}, or {digits} minor units "
            f"({as_minor}) as it was once read? Write {flag} '{digits} {currency}' for the "
            f"first, {flag} {format_amount(digits, decimals)}"
            + (f" or {minor_flag} {digits}" if minor_flag else "")
            + f" for the second (a bare whole number is read in {currency} up to {plain_most}).",
            code="AMOUNT_AMBIGUOUS",
        )
    return int(minor)


def wire_json(text: str | bytes) -> Any:
    """JSON a command sends to the service, read as the service's edge reads a body:
    ``ValueError`` for ``NaN``, an infinity, a number too large for a double (which the
    request could not carry) or a key twice in one object (json keeps its last value, where
    the service refuses the body), ``RecursionError`` when it nests too deep."""
    return json.loads(
        text, parse_constant=no_constant, parse_float=finite_float, object_pairs_hook=unique_keys
    )


_DIGITS = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def units_of(
    text: str, currency: str, flag: str, *, plain_most: int | None = None, minor_flag: str = ""
) -> int:
    """:func:`amount_of` for a command line: a refusal prints ``CODE: message`` and exits 2."""
    try:
        return amount_of(text, currency, flag, plain_most=plain_most, minor_flag=minor_flag)
    except BadInput as exc:
        stop(f"{exc.code}: {exc.message}")


def price_of(amount: str, currency: str, flag: str = "--price") -> dict[str, Any]:
    """``0.25`` (or ``"0.25 USDC"``) as the API's ``{amount_minor: 250000, currency: "USDC"}``:
    amounts are typed in the currency's units, with at most its decimals (an unlisted asset has
    none). These flags always took units, so a bare whole number is never ambiguous here."""
    return {"amount_minor": units_of(amount, currency, flag), "currency": currency}


def columns(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Container[int] = ()
) -> list[str]:
    """The header line, then each row, in columns as wide as their widest cell, two spaces
    apart; the columns in ``right`` (amounts, counts) are aligned right, so their digits line
    up; the last column is not padded (a title of any length ends the line)."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    last = len(headers) - 1

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            if i == last:
                out.append(cell.rjust(widths[i]) if i in right else cell)
            else:
                out.append(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Container[int] = ()
) -> None:
    """:func:`columns` printed: the header line only for a person at a terminal, so a script
    reading a pipe gets one item per line, its id first (``| awk '{print $1}'`` and
    ``| head -1`` keep working); the rows are aligned the same either way."""
    head, *body = columns(headers, rows, right=right)
    if body and at_terminal():
        typer.echo(head)
    for text in body:
        typer.echo(text)


def printable(value: object) -> str:
    """``value`` as text a terminal shows as it is: each character Python does not call
    printable (controls such as ESC, CR and newline, format characters such as the right-to-left
    override, separators other than the space, a lone surrogate) written as its escape
    (``\\x1b``, ``\\u202e``).

    For text a verifier prints that the party it checks chose, signed or not (a receipt's
    policy decision, a bundle's manifest): printed raw, an escape sequence in it moves the
    cursor and rewrites a line already printed, so ``verdict: FAIL`` reads PASS, and a lone
    surrogate cannot be written at all.
    """
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(char: str) -> str:
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def at_terminal() -> bool:
    """Whether standard output is a terminal (a person reads it) rather than a pipe or file."""
    return sys.stdout.isatty()


def words(name: str | None) -> str:
    """A status or ending as words: ``awaiting_verification`` → "awaiting verification"."""
    return (name or "").replace("_", " ")


def say_if_empty(page: Mapping[str, Any], items: str, *, first: bool, later: str = "older") -> None:
    """The line an empty page prints: a filtered page that read its range's share and found
    none still names a cursor, and ``later`` items (in the listing's order) may match; else
    there are none (more)."""
    if page[items]:
        return
    if page.get("next_cursor"):
        typer.echo(f"No {items} on this page; {later} ones may match.")
    else:
        typer.echo(f"No {items}." if first else f"No more {items}.")


@dataclass(frozen=True)
class Whole:
    """A whole-number option's reading, as typer's ``parser``: ASCII digits with at most a
    ``-`` first (:func:`~adjudge.numerals.read_whole`), from ``least`` to ``most`` (None: no
    bound here, the service's or the setting's apply). typer's own reading took ``8_000`` as
    8000, `` 5`` as 5 and ``5.0`` as 5. Otherwise the command exits 2 naming the option."""

    least: int | None = None
    most: int | None = None

    def __call__(self, given: str | int) -> int:
        """``given``'s number (a default comes as one, an argument as text); refused as above."""
        text = str(given)
        value = read_whole(text)
        if value is None:
            raise typer.BadParameter(
                f"{text[:40]!r} is not a whole number: write digits only, with no point, space "
                "or underscore."
            )
        least, most = self.least, self.most
        if (least is not None and value < least) or (most is not None and value > most):
            raise typer.BadParameter(f"{text[:40]} is not a whole number {_span(least, most)}.")
        return value


@dataclass(frozen=True)
class Number:
    """A number option's reading, as typer's ``parser``: a plain decimal
    (:func:`~adjudge.numerals.read_decimal`), finite, from ``least`` (``above``: past it) to
    ``most`` (None: no bound here, the service's or the setting's apply). typer's own reading
    took ``nan``, ``inf`` and ``1_0.5``. Otherwise the command exits 2 naming the option and
    ``what`` it takes."""

    least: float | None = None
    most: float | None = None
    above: bool = False
    what: str = "a number"

    def __call__(self, given: str | float) -> float:
        """``given``'s number (a default comes as one, an argument as text); refused as above."""
        text = str(given)
        value = read_decimal(text)
        if value is None:
            raise typer.BadParameter(
                f"{text[:40]!r} is not {self.what}: write digits, with an optional point and "
                "exponent (like 5 or 0.5)."
            )
        if not math.isfinite(value):  # past the largest float: 1e400
            raise typer.BadParameter(f"{text[:40]} is too large to be {self.what}.")
        low, most = self.least, self.most
        if (low is not None and (value <= low if self.above else value < low)) or (
            most is not None and value > most
        ):
            bounds = _bounds(low, most, above=self.above)
            raise typer.BadParameter(f"{text[:40]} is not {self.what} {bounds} (like 5 or 0.5).")
        return value


def _span(least: int | None, most: int | None) -> str:
    """A whole number's range in words: ``from 1 to 200``, ``of at least 1``."""
    if least is not None and most is not None:
        return f"from {least} to {most}"
    return f"of at least {least}" if most is None else f"of at most {most}"


def _bounds(least: float | None, most: float | None, *, above: bool) -> str:
    """A number's range in words: ``above 0 and at most 86400``."""
    words = [] if least is None else [f"{'above' if above else 'at least'} {least:g}"]
    words += [] if most is None else [f"at most {most:g}"]
    return " and ".join(words)


def whole_option(
    *flags: str, least: int | None = None, most: int | None = None, **rest: Any
) -> Any:
    """A ``typer.Option`` read by :class:`Whole`, whose help shows its range."""
    return typer.Option(*flags, parser=Whole(least, most), min=least, max=most, **rest)


def number_option(
    *flags: str, least: float | None = None, most: float | None = None, **rest: Any
) -> Any:
    """A ``typer.Option`` read by :class:`Number`, whose help shows its range."""
    return typer.Option(*flags, parser=Number(least, most), min=least, max=most, **rest)


#: The longest a command waits between two rounds or for an answer: a day (past it a number
#: of seconds is a mistake, and past about 1e11 ``time.sleep`` itself refuses it).
MOST_SECONDS = 86_400.0
#: A float option that is a number of seconds: above 0, at most :data:`MOST_SECONDS` (a worker
#: told ``--poll nan`` crashed in ``time.sleep``, one told ``--poll 0`` polled without pause).
seconds = Number(0, MOST_SECONDS, above=True, what="a number of seconds")


def stop(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``message`` on stderr and exit with ``code``."""
    typer.echo(message, err=True)
    raise typer.Exit(code)


@dataclass
class Session:
    """The service's URL, the caller's key, and whether to print JSON; makes one client."""

    url: str
    key: str | None
    as_json: bool = False
    _client: Client | None = field(default=None, repr=False)

    @property
    def client(self) -> Client:
        """The API client (made on first use, so ``--help`` never loads httpx)."""
        if self._client is None:
            from adjudge.client import Client  # noqa: PLC0415 - keep `adjudge --help` fast

            self._client = Client(self.url, self.key)
        return self._client

    def call(self, fn: Callable[[Client], T], *, keyed: bool = False) -> T:
        """``fn(client)``; a refusal prints ``CODE: message`` and exits 1, no usable answer
        exits 2 with what was tried. ``keyed``: the command takes ``--idempotency-key``, so a
        state change that may have been done is offered again with its key."""
        from adjudge.client import ApiError, ServiceUnavailable  # noqa: PLC0415

        try:
            return fn(self.client)
        except ApiError as refusal:
            where = f" (request {refusal.request_id})" if refusal.request_id else ""
            again = ""
            if refusal.code == "IDEMPOTENCY_IN_PROGRESS" and refusal.idempotency_key:
                again = _run_again(refusal.idempotency_key, keyed)
            stop(f"{refusal.code}: {refusal.message}{where}{again}", EXIT_REFUSED)
        except ServiceUnavailable as exc:
            key = exc.idempotency_key
            said = exc.message if exc.message.endswith(".") else f"{exc.message}."
            stop(said + ("" if key is None else _run_again(key, keyed)), EXIT_BAD_INPUT)


def _run_again(key: str, keyed: bool) -> str:
    """How to send again a state change that may have been done: with its key, where the
    command takes ``--idempotency-key``; the others make a new key each run, so a run again is
    a second request, and the flag they do not have is not offered."""
    if keyed:
        return f" Run the command again with --idempotency-key {key}."
    return (
        " This command takes no --idempotency-key: see whether it was done before running it again."
    )
