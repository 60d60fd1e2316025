"""A deployment's settings: one typed object, each default written once.

Every setting has one name, spelled three ways: ``fee_bps`` in a TOML file, ``ADJUDGE_FEE_BPS``
in the environment, ``--fee-bps`` on ``adjudge serve`` (a switch is ``--x/--no-x``). Where one
setting is given in several places, the most specific wins (:meth:`Settings.load`)::

    flags  >  environment  >  file  >  defaults

The operating guide's table of settings (``docs/guide/operating.md``) is generated from this
class by ``scripts/gen_settings_table.py``, and a test fails when it is stale.

Reading the world is the edge's act: :meth:`Settings.load` reads the environment and the file,
and the command passes its flags in. Built directly (``Settings(take_limit=3)``, as the library
and the tests do), a settings object reads nothing but its arguments. The pure core never reads
settings: the app and the service pass each value where it is needed.

A bad value is refused when the object is built, never later: an :class:`adjudge.Error` whose
code says which setting (``INVALID_FEE``, ``INVALID_TAKE_LIMIT``, else ``INVALID_SETTING``) and
whose message names where the value came from and what the setting is.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, get_args

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from adjudge.calls.pricing import DEFAULT_PRICE_NOTICE, MAX_PRICE_NOTICE
from adjudge.errors import BadInput
from adjudge.input_files import read_input
from adjudge.market import DEFAULT_FEE_BPS, DEFAULT_TAKE_LIMIT, MAX_FEE_BPS, MAX_TAKE_LIMIT
from adjudge.numerals import read_decimal, read_whole

__all__ = ["ENV_PREFIX", "Settings", "env_name", "flag_name", "has_flag"]

#: What every setting's environment variable starts with.
ENV_PREFIX: Final = "ADJUDGE_"
#: The settings whose bad value has a code of its own (every other one: ``INVALID_SETTING``).
_CODES: Final = {"fee_bps": "INVALID_FEE", "take_limit": "INVALID_TAKE_LIMIT"}
_HOUR: Final = timedelta(hours=1)
#: Marks a setting given in the file or the environment only (``adjudge serve`` has no flag).
_NO_FLAG: Final[dict[str, Any]] = {"flag": False}
#: Where each value being validated came from (``--fee-bps 4000``), while :meth:`Settings.load`
#: builds one; empty otherwise.
_WHERE: ContextVar[Mapping[str, str]] = ContextVar("settings_where", default=MappingProxyType({}))


def env_name(name: str) -> str:
    """The environment variable of setting ``name``: ``ADJUDGE_FEE_BPS``."""
    return ENV_PREFIX + name.upper()


def has_flag(field: FieldInfo) -> bool:
    """Whether ``adjudge serve`` takes the setting as a flag (tuning is file or environment)."""
    extra = field.json_schema_extra
    return not isinstance(extra, dict) or extra.get("flag") is not False


def flag_name(name: str, field: FieldInfo) -> str:
    """The ``adjudge serve`` flag of setting ``name``: ``--fee-bps``, or ``--x/--no-x`` for a
    switch."""
    flag = "--" + name.replace("_", "-")
    return f"{flag}/--no-{flag[2:]}" if field.annotation is bool else flag


class Settings(BaseSettings):
    """Everything an operator may set, with its default and its bounds (see the module)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,  # ADJUDGE_X= (empty) reads as unset
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,
        validate_default=True,
    )

    # --- where and how the service runs
    db: str = Field(
        "sqlite:///adjudge.db",
        min_length=1,
        description="Database URL: `sqlite:///FILE` or `postgresql+psycopg://…`.",
    )
    host: str = Field("127.0.0.1", min_length=1, description="Interface to listen on.")
    port: int = Field(8000, ge=1, le=65535, description="Port to listen on.")
    threads: int = Field(
        0,
        ge=0,
        le=1000,
        description="Threads running requests (0: the default, 8 on SQLite, 40 otherwise; at "
        "most 1000).",
    )
    connections_per_address: int = Field(
        64,
        ge=1,
        le=100_000,
        description="Connections one client address may hold open at once in this process; a "
        "new one past it is answered 429 and closed (loopback, 127.0.0.0/8 and ::1, is not "
        "counted; raise it behind a proxy on another machine, whose address every request "
        "shares).",
    )
    access_log: bool = Field(True, description="Write one JSON line per request to standard error.")
    signing_key: Path = Field(
        Path("adjudge-signing-key.pem"),
        description="PEM file of the Ed25519 key that signs receipts (made if missing).",
    )
    server_key: Path = Field(
        Path("adjudge-server-key"),
        description="File of the server key that seals secrets at rest — the gateway's signing "
        "keys, providers' credentials, webhook secrets (made if missing; keep it with the "
        "database; `adjudge webhooks deliver` needs the same file).",
    )
    upkeep_seconds: float = Field(
        30.0,
        ge=1.0,
        le=86_400.0,
        description="How often this process ends interrupted calls, lapses takes whose window "
        "ended, and pays providers the charges whose report deadline passed (1 to 86400).",
    )

    # --- the marketplace
    fee_bps: int = Field(
        DEFAULT_FEE_BPS,
        ge=0,
        le=MAX_FEE_BPS,
        description=f"Platform fee in basis points, read at each payout (0 to {MAX_FEE_BPS}).",
    )
    take_limit: int = Field(
        DEFAULT_TAKE_LIMIT,
        ge=1,
        le=MAX_TAKE_LIMIT,
        description="Tasks one agent may hold taken and not yet submitted, at once "
        f"(1 to {MAX_TAKE_LIMIT}).",
    )
    price_notice_hours: float = Field(
        DEFAULT_PRICE_NOTICE / _HOUR,
        ge=0,
        le=MAX_PRICE_NOTICE / _HOUR,
        description="How long a tool's price increase waits before calls are charged it (a "
        f"decrease applies at once); 0 to {MAX_PRICE_NOTICE / _HOUR:g}.",
    )

    # --- addresses the service may reach
    allow_private_providers: bool = Field(
        False,
        description="Let tools call providers on loopback or private networks (a local demo); "
        "off by default, so no provider can point the gateway at an internal address.",
    )
    webhooks: bool = Field(
        True,
        description="Deliver webhooks from this process (a background thread); off, run "
        "`adjudge webhooks deliver` instead.",
    )
    webhooks_allow_private: bool = Field(
        False,
        description="Let webhook endpoints use loopback and private addresses (local testing "
        "only).",
    )

    # --- the meaning check's judges
    judges: str = Field(
        "",
        max_length=8000,
        description="Meaning judges a policy may name, comma-separated `KEY=MODEL@BASE_URL`: "
        "each a model behind an OpenAI-compatible chat-completions endpoint (its API key from "
        "ADJUDGE_JUDGE_API_KEY). Empty: none (with `--demo`, two stand-in judges served "
        "beside the demo).",
    )

    # --- tuning, in the file or the environment only (no flag)
    regex_workers: int | None = Field(
        None,
        ge=1,
        le=256,
        description="Processes that run regex checks under their time limit (unset: one fewer "
        "than the machine's CPUs, at least two).",
        json_schema_extra=_NO_FLAG,
    )
    judge_workers: int = Field(
        2,
        ge=1,
        le=256,
        description="Processes that judge a paid call's answer (or check its arguments) where the "
        "contract or policy has no bound on its work (a pattern that can backtrack, a `$ref`, a "
        "JMESPath function) or the answer is too large for the bound.",
        json_schema_extra=_NO_FLAG,
    )
    judge_seconds: float = Field(
        2.0,
        ge=0.05,
        le=60,
        description="How long one answer may take to be judged in those processes; past it the "
        "call ends as the gateway's own failure (voided and refunded, no strike).",
        json_schema_extra=_NO_FLAG,
    )
    judge_memory_mb: int = Field(
        2048,
        ge=256,
        le=1 << 20,
        description="The address space each of those processes may use, in MiB.",
        json_schema_extra=_NO_FLAG,
    )
    slow_check_wait_seconds: float = Field(
        10.0,
        ge=0.1,
        le=600,
        description="How long a check that needs the regex pool waits for its turn before the "
        "service answers `503 CHECKER_UNAVAILABLE`.",
        json_schema_extra=_NO_FLAG,
    )
    stage_times: Path | None = Field(
        None,
        description="A file the CPU time of each stage of the hot paths is written to at exit, "
        "for the benchmarks (unset: not timed).",
        json_schema_extra=_NO_FLAG,
    )
    idempotency_keys_per_hour: int = Field(
        10_000,
        ge=1,
        le=10_000_000,
        description="State changes one account may make with a new Idempotency-Key in an hour "
        "(each stores its answer for 30 days; past it `429 IDEMPOTENCY_KEYS_QUOTA_EXCEEDED`, "
        "and a key already answered still replays).",
        json_schema_extra=_NO_FLAG,
    )
    webhooks_max_endpoints: int = Field(
        10,
        ge=1,
        le=1000,
        description="Webhook endpoints one account may have enabled at once.",
        json_schema_extra=_NO_FLAG,
    )
    webhooks_test_events: int = Field(
        10,
        ge=1,
        le=10_000,
        description="Test events one webhook endpoint may be sent per test window (each is a "
        "request to a URL the caller chose, so they are bounded).",
        json_schema_extra=_NO_FLAG,
    )
    webhooks_replays: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description="Replays of deliveries one account may make per test window (each is a "
        "request to a URL the caller chose, as a test event is, so they are bounded).",
        json_schema_extra=_NO_FLAG,
    )
    webhooks_test_window_hours: float = Field(
        1.0,
        gt=0,
        le=24 * 7,
        description="The window `webhooks_test_events` and `webhooks_replays` are counted over.",
        json_schema_extra=_NO_FLAG,
    )
    webhooks_lease_seconds: float = Field(
        60.0,
        ge=15,
        le=3600,
        description="How long a worker holds the deliveries it claims; it must outlast "
        "an attempt (about 10 s), so no other worker sends it meanwhile.",
        json_schema_extra=_NO_FLAG,
    )
    webhooks_batch: int = Field(
        50,
        ge=1,
        le=1000,
        description="Delivery attempts a worker keeps in flight at once, at most (and a "
        "`--once` pass sends at once).",
        json_schema_extra=_NO_FLAG,
    )
    webhooks_poll_seconds: float = Field(
        1.0,
        ge=0.05,
        le=60,
        description="How long an idle delivery worker waits before it looks for due "
        "deliveries again.",
        json_schema_extra=_NO_FLAG,
    )

    @field_validator("*", mode="before")
    @classmethod
    def _not_a_switch(cls, value: Any, info: ValidationInfo) -> Any:
        """A number is never ``true`` or ``false`` (a settings file's ``port = true`` was taken
        as port 1): only a switch takes one."""
        name = info.field_name
        if isinstance(value, bool) and name and cls.model_fields[name].annotation is not bool:
            raise ValueError("this setting is not a switch: give a value, not true or false")
        return value

    def __init__(self, **values: Any) -> None:
        """Validate ``values`` (and nothing else: see :meth:`load`); a bad one is refused."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _refusal(exc, _WHERE.get()) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the arguments: the environment and the file are read by :meth:`load`."""
        return (init_settings,)

    @classmethod
    def load(
        cls, flags: Mapping[str, object] | None = None, *, config: Path | None = None
    ) -> Settings:
        """The settings from the defaults, then the TOML file ``config`` (none: no file), then
        the ``ADJUDGE_*`` environment variables, then ``flags`` (a setting's name to its value;
        ``None`` is a flag not given), each over the one before.

        Refused (:class:`adjudge.errors.BadInput`): a file that cannot be read
        (``FILE_UNREADABLE``), is not TOML or names what is no setting
        (``CONFIG_FILE_INVALID``), a value not written as its setting's kind is (in the file
        its TOML type, in the environment :data:`_ENV_READERS`) and a value out of its setting's
        bounds, with the code :class:`Settings` gives it and a message naming where the value
        came from.
        """
        # Each layer: its values, and where each came from (for a refusal's message).
        layers: list[tuple[Mapping[str, object], Mapping[str, str]]] = []
        if config is not None:
            found = _read_file(config)
            layers.append((found, {k: f"{k} = {v!r} in {config}" for k, v in found.items()}))
        texts = EnvSettingsSource(cls)()
        env = {k: _env_value(k, v) for k, v in texts.items()}
        layers.append((env, {k: f"{env_name(k)}={_shown(v)}" for k, v in texts.items()}))
        given = {k: v for k, v in (flags or {}).items() if v is not None}
        layers.append((given, {k: _flag_given(k, v) for k, v in given.items()}))
        merged: dict[str, object] = {}
        where: dict[str, str] = {}
        for values, named in layers:
            merged.update(values)
            where.update(named)
        token = _WHERE.set(where)
        try:
            return cls(**merged)
        finally:
            _WHERE.reset(token)

    @property
    def price_notice(self) -> timedelta:
        """:attr:`price_notice_hours` as a time span."""
        return self.price_notice_hours * _HOUR

    @property
    def webhooks_test_window(self) -> timedelta:
        """:attr:`webhooks_test_window_hours` as a time span."""
        return self.webhooks_test_window_hours * _HOUR

    @property
    def webhooks_lease(self) -> timedelta:
        """:attr:`webhooks_lease_seconds` as a time span."""
        return timedelta(seconds=self.webhooks_lease_seconds)


def _flag_given(name: str, value: object) -> str:
    """How a flag was given: ``--fee-bps 4000``, ``--no-webhooks``."""
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return flag if value else f"--no-{flag[2:]}"
    return f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"


#: The most bytes a settings file is read to (a regular file only: :func:`read_input`).
SETTINGS_BYTES = 1024 * 1024


def _read_file(path: Path) -> dict[str, object]:
    """The settings a TOML file names; refused when unreadable, not TOML, naming what is no
    setting, or giving a setting a value of another TOML type than its own (:func:`_is_kind`:
    pydantic's own reading of a value is lax)."""
    try:
        text = read_input(path, SETTINGS_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise BadInput(
            f"cannot read the settings file {path}: {reason}.", code="FILE_UNREADABLE"
        ) from None
    try:
        values = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(
            f"the settings file {path} is not TOML: {exc}.", code="CONFIG_FILE_INVALID"
        ) from None
    names = Settings.model_fields
    for key, value in values.items():
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise BadInput(
                f"the settings file {path} names {key!r}, which is no setting{hint}; the "
                "settings are listed in docs/guide/operating.md.",
                code="CONFIG_FILE_INVALID",
            )
        if isinstance(value, dict | list):
            raise BadInput(
                f"the settings file {path} gives {key} a table or a list; it takes one value.",
                code="CONFIG_FILE_INVALID",
            )
        wanted = _toml_kind(names[key])
        if not _is_kind(value, wanted):
            raise BadInput(
                f"{key} = {_cut(repr(value))} in {path}: this setting is {_KIND_WORDS[wanted]}. "
                f"{key}: {names[key].description}",
                code=_CODES.get(key, "INVALID_SETTING"),
            )
    return values


#: What a value of each kind of setting is written as in a settings file.
_KIND_WORDS: Final = {
    bool: "a switch: write true or false, unquoted",
    int: "a whole number: write it unquoted, without a point (like 8000)",
    float: "a number: write it unquoted (like 30 or 2.5)",
    str: "text: write it in quotes",
}


def _toml_kind(field: FieldInfo) -> type:
    """The TOML type a setting is written as in a file: ``bool``, ``int``, ``float`` or
    ``str`` (a path is text)."""
    kinds = [k for k in (field.annotation, *get_args(field.annotation)) if k in _KIND_WORDS]
    return kinds[0] if kinds else str


def _is_kind(value: object, kind: type) -> bool:
    """Whether a TOML value is written as a setting of ``kind`` is: a switch only ``true`` or
    ``false`` (the settings' reading took ``"yes"`` and ``1`` as on), a whole number only an
    integer (it took ``"8000"`` and ``8000.0``), a number an integer or a float (it took
    ``"30"``), text only a string."""
    if isinstance(value, bool) or kind is bool:
        return isinstance(value, bool) and kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


#: How a setting's environment variable is read, by the setting's kind: the whole text, ASCII
#: only (Python's own reading took ``8_000``, `` 8000 `` and ``8000.0`` as port 8000, ``yes``,
#: ``on`` and ``1`` as a switch on, and ``nan`` and ``1_0.5`` as numbers); None is not a value
#: of the kind. Text (a path too) is taken as written.
_ENV_READERS: Final[Mapping[type, Callable[[str], object]]] = {
    bool: {"true": True, "false": False}.get,
    int: read_whole,
    float: read_decimal,
}
#: What a value of each kind of setting is written as in the environment.
_ENV_WORDS: Final = {
    bool: "a switch: write true or false, in lower case",
    int: "a whole number: write digits only, with no point, space or underscore (like 8000)",
    float: "a number: write digits, with an optional point and exponent (like 30, 2.5 or 1e3)",
}


def _env_value(name: str, text: str) -> object:
    """Setting ``name``'s value from its environment variable's ``text``, of the setting's kind;
    refused naming the variable when the text is not one (:data:`_ENV_READERS`)."""
    field = Settings.model_fields[name]
    kind = _toml_kind(field)
    read = _ENV_READERS.get(kind)
    value = text if read is None else read(text)
    if value is None:
        raise BadInput(
            f"{env_name(name)}={_shown(text)}: this setting is {_ENV_WORDS[kind]}. "
            f"{name}: {field.description}",
            code=_CODES.get(name, "INVALID_SETTING"),
        )
    return value


def _shown(text: str) -> str:
    """An environment value as a refusal shows it: as written, quoted with its escapes if it
    holds a space at an end or what does not print (``' 8000 '`` is not ``8000``)."""
    return _cut(text if text.isprintable() and text == text.strip() else repr(text))


def _cut(shown: str) -> str:
    """``shown`` cut to 80 characters (a refusal names a value, it need not repeat a long one)."""
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _refusal(exc: ValidationError, where: Mapping[str, str]) -> BadInput:
    """The first of ``exc``'s errors as a refusal a person can act on."""
    error = exc.errors(include_url=False)[0]
    name = str(error["loc"][0]) if error["loc"] else ""
    field = Settings.model_fields.get(name)
    if field is None:  # an argument that is no setting (a typo in the code that built it)
        return BadInput(f"{name!r} is no setting.", code="INVALID_SETTING")
    given = where.get(name) or f"{name} = {error.get('input')!r}"
    reason = str(error["msg"])
    reason = reason[:1].lower() + reason[1:]
    return BadInput(
        f"{given}: {reason}. {name}: {field.description}",
        code=_CODES.get(name, "INVALID_SETTING"),
    )
