"""One typed settings object: each setting read from a flag, the environment and a TOML file,
in that order of precedence over its one default; a bad value refused with its code and where it
came from; the operating guide's table is the object's."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from adjudge.errors import BadInput
from adjudge.settings import Settings, env_name
from tests.support.scripts import load_script

ROOT = Path(__file__).parent.parent
NAMES = list(Settings.model_fields)


@pytest.fixture(autouse=True)
def _no_adjudge_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from an environment that names no setting."""
    for name in os.environ:
        if name.startswith("ADJUDGE_") and name[8:].lower() in Settings.model_fields:
            monkeypatch.delenv(name)


#: A value of each setting that is unset by default.
_SET = {"regex_workers": 3, "stage_times": "stages.json"}


def _other(name: str) -> object:
    """A valid value of setting ``name`` other than its default."""
    default = Settings.model_fields[name].default
    if default is None:
        return _SET[name]
    if isinstance(default, bool):
        return not default
    if isinstance(default, int | float):
        return default + 1
    return f"{default}-other"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, int | float) else f'"{value}"'


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "adjudge.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _as_given(value: object) -> object:
    return str(value) if isinstance(value, Path) else value


@pytest.mark.parametrize("name", NAMES)
def test_each_setting_is_read_from_a_flag(name: str) -> None:
    """A flag's value (its name to its value, as the command passes it) is the setting."""
    value = _other(name)
    assert _as_given(getattr(Settings.load({name: value}), name)) == value


@pytest.mark.parametrize("name", NAMES)
def test_each_setting_is_read_from_the_environment(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ADJUDGE_<NAME>`` sets it (as text: `true`/`false` for a switch)."""
    value = _other(name)
    monkeypatch.setenv(env_name(name), _toml(value).strip('"'))
    assert _as_given(getattr(Settings.load(), name)) == value


@pytest.mark.parametrize("name", NAMES)
def test_each_setting_is_read_from_the_file(name: str, tmp_path: Path) -> None:
    """``name = value`` in the TOML file sets it."""
    value = _other(name)
    loaded = Settings.load(config=_file(tmp_path, f"{name} = {_toml(value)}\n"))
    assert _as_given(getattr(loaded, name)) == value


def test_flags_beat_the_environment_which_beats_the_file_which_beats_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each layer overrides only what it gives, the most specific winning; a flag not given
    (None) leaves the layers below it."""
    config = _file(tmp_path, "fee_bps = 700\ntake_limit = 7\nport = 9007\n")
    monkeypatch.setenv("ADJUDGE_TAKE_LIMIT", "8")
    monkeypatch.setenv("ADJUDGE_PORT", "9008")
    loaded = Settings.load({"port": 9009, "take_limit": None}, config=config)
    assert (loaded.fee_bps, loaded.take_limit, loaded.port) == (700, 8, 9009)
    assert loaded.host == Settings.model_fields["host"].default
    assert Settings.load(config=config).port == 9008
    monkeypatch.delenv("ADJUDGE_PORT")
    assert Settings.load(config=config).port == 9007
    assert Settings.load().port == 8000


def test_built_directly_it_reads_only_its_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Settings(…)`` (the library's and the tests' way) never reads the environment: that is
    the edge's act, through ``Settings.load``."""
    monkeypatch.setenv("ADJUDGE_FEE_BPS", "1")
    assert Settings().fee_bps == 1000 and Settings(fee_bps=5).fee_bps == 5
    assert Settings.load().fee_bps == 1


def test_an_empty_variable_is_unset_and_a_stranger_is_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ADJUDGE_PORT=`` reads as unset; ``ADJUDGE_URL`` (the CLI's own) names no setting and is
    left alone."""
    monkeypatch.setenv("ADJUDGE_PORT", "")
    monkeypatch.setenv("ADJUDGE_URL", "http://elsewhere")
    assert Settings.load().port == 8000


@pytest.mark.parametrize(
    ("where", "code", "said"),
    [
        ("flag", "INVALID_FEE", "--fee-bps 5000: input should be less than or equal to 3000"),
        ("env", "INVALID_FEE", "ADJUDGE_FEE_BPS=5000: input should be less than or equal"),
        ("file", "INVALID_FEE", "fee_bps = 5000 in "),
    ],
)
def test_a_bad_value_is_refused_saying_where_it_came_from(
    where: str, code: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of range in any layer: the setting's code, where the value was given, and what the
    setting is."""
    flags: dict[str, object] = {}
    config = None
    if where == "flag":
        flags["fee_bps"] = 5000
    elif where == "env":
        monkeypatch.setenv("ADJUDGE_FEE_BPS", "5000")
    else:
        config = _file(tmp_path, "fee_bps = 5000\n")
    with pytest.raises(BadInput) as err:
        Settings.load(flags, config=config)
    assert err.value.code == code and said in err.value.message
    assert "Platform fee in basis points" in err.value.message


@pytest.mark.parametrize(
    ("values", "code"),
    [
        ({"take_limit": 0}, "INVALID_TAKE_LIMIT"),
        ({"port": 70000}, "INVALID_SETTING"),
        ({"threads": -1}, "INVALID_SETTING"),
        ({"upkeep_seconds": 0.5}, "INVALID_SETTING"),
        ({"price_notice_hours": 2161}, "INVALID_SETTING"),
        ({"upkeep_seconds": float("nan")}, "INVALID_SETTING"),
        ({"webhooks_lease_seconds": 5}, "INVALID_SETTING"),
        ({"db": ""}, "INVALID_SETTING"),
        ({"fee_bsp": 10}, "INVALID_SETTING"),
    ],
)
def test_a_bad_value_built_in_code_is_refused(values: dict[str, object], code: str) -> None:
    """Built directly, a value out of bounds (or a name that is no setting) is refused by
    kind and code too, never kept for later."""
    with pytest.raises(BadInput) as err:
        Settings(**values)
    assert err.value.code == code


def test_a_word_where_a_number_goes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ADJUDGE_PORT=eighty`` is not a port."""
    monkeypatch.setenv("ADJUDGE_PORT", "eighty")
    with pytest.raises(BadInput) as err:
        Settings.load()
    assert err.value.code == "INVALID_SETTING" and "ADJUDGE_PORT=eighty" in err.value.message


@pytest.mark.parametrize(
    ("text", "code", "said"),
    [
        ('allow_private_providers = "yes"\n', "INVALID_SETTING", "a switch: write true or false"),
        ("allow_private_providers = 1\n", "INVALID_SETTING", "a switch: write true or false"),
        ('webhooks = "false"\n', "INVALID_SETTING", "a switch: write true or false"),
        ('port = "8000"\n', "INVALID_SETTING", "a whole number: write it unquoted"),
        ("port = 8000.0\n", "INVALID_SETTING", "a whole number: write it unquoted"),
        ("port = true\n", "INVALID_SETTING", "a whole number: write it unquoted"),
        ('fee_bps = "800"\n', "INVALID_FEE", "a whole number: write it unquoted"),
        ("take_limit = 3.0\n", "INVALID_TAKE_LIMIT", "a whole number: write it unquoted"),
        ('upkeep_seconds = "30"\n', "INVALID_SETTING", "a number: write it unquoted"),
        ("upkeep_seconds = false\n", "INVALID_SETTING", "a number: write it unquoted"),
        ("db = 5\n", "INVALID_SETTING", "text: write it in quotes"),
        ("signing_key = 2026-01-01\n", "INVALID_SETTING", "text: write it in quotes"),
    ],
)
def test_a_file_value_of_another_type_than_its_setting_is_refused(
    text: str, code: str, said: str, tmp_path: Path
) -> None:
    """A file's switch is a TOML boolean, a whole number an integer, a number an integer or a
    float, text a string: anything else is refused naming the setting, the file and what to
    write (``"yes"`` and ``1`` turned a switch on, ``"8000"`` and ``8000.0`` were port 8000)."""
    config = _file(tmp_path, text)
    name = text.split(" ", 1)[0]
    with pytest.raises(BadInput) as err:
        Settings.load(config=config)
    assert err.value.code == code, err.value.message
    assert err.value.message.startswith(f"{name} = ") and f" in {config}: " in err.value.message
    assert said in err.value.message and f"{name}: " in err.value.message


def test_a_whole_number_is_a_number_in_the_file(tmp_path: Path) -> None:
    """A number setting written as a TOML integer is that number."""
    config = _file(tmp_path, "upkeep_seconds = 30\nprice_notice_hours = 0\n")
    settings = Settings.load(config=config)
    assert (settings.upkeep_seconds, settings.price_notice_hours) == (30.0, 0.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [("allow_private_providers", "junk"), ("port", "80 80"), ("upkeep_seconds", "soon")],
)
def test_an_environment_value_that_is_no_value_is_refused(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment is text and read as text (``true``/``false``, digits), but junk is
    refused naming the variable, its value and the setting."""
    monkeypatch.setenv(env_name(name), value)
    with pytest.raises(BadInput) as err:
        Settings.load()
    assert err.value.code == "INVALID_SETTING"
    assert err.value.message.startswith(f"{env_name(name)}={value}: ") and f"{name}: " in (
        err.value.message
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        *[("port", t) for t in ("8_000", " 8000", "8000 ", "8000.0", "+8000", "0x1f40")],
        ("port", "８０００"),
        *[("regex_workers", t) for t in ("3.0", "3_0", "three", "null")],
        *[("fee_bps", t) for t in ("1e3", "800\n")],
        *[("upkeep_seconds", t) for t in ("nan", "inf", "-inf", "1_0.5", " 30", "30.", ".5")],
        *[("upkeep_seconds", t) for t in ("0x1e", "30s", "1e", "٣٠")],
        *[("webhooks", t) for t in ("yes", "no", "on", "off", "1", "0", "y", "t", "True")],
        *[("allow_private_providers", t) for t in ("FALSE", " true", "true\n")],
    ],
)
def test_an_environment_value_read_laxly_before_is_refused(
    name: str, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole number is digits (a ``-`` first at most), a number digits with an optional
    fraction and exponent, a switch ``true`` or ``false``: ``8_000``, `` 8000``, ``8000.0``,
    ``nan``, ``yes`` and ``1`` were read as Python reads them, and are refused naming the
    variable, its text and what the setting is written as."""
    monkeypatch.setenv(env_name(name), text)
    with pytest.raises(BadInput) as err:
        Settings.load()
    code = {"fee_bps": "INVALID_FEE"}.get(name, "INVALID_SETTING")
    assert err.value.code == code, err.value.message
    shown = text if text.isprintable() and text == text.strip() else repr(text)
    assert err.value.message.startswith(f"{env_name(name)}={shown}: this setting is a ")
    assert f". {name}: {Settings.model_fields[name].description}" in err.value.message


@pytest.mark.parametrize(
    ("name", "text", "value"),
    [
        ("port", "8001", 8001),
        ("port", "08001", 8001),
        ("regex_workers", "4", 4),
        ("fee_bps", "0", 0),
        ("upkeep_seconds", "45", 45.0),
        ("upkeep_seconds", "2.5e1", 25.0),
        ("upkeep_seconds", "1E2", 100.0),
        ("price_notice_hours", "0.5", 0.5),
        ("webhooks", "false", False),
        ("allow_private_providers", "true", True),
        ("host", " 0.0.0.0", " 0.0.0.0"),
        ("signing_key", "keys/k 1.pem", Path("keys/k 1.pem")),
        ("stage_times", "stages.json", Path("stages.json")),
    ],
)
def test_an_environment_value_written_as_its_kind_is_read(
    name: str, text: str, value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Digits, a plain decimal and ``true``/``false`` are read as their setting's kind; text
    and paths are taken as written."""
    monkeypatch.setenv(env_name(name), text)
    assert getattr(Settings.load(), name) == value


def test_an_environment_number_out_of_any_range_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """More digits than a whole number is read from, or a number past what a float holds, is
    refused as any value out of range is, not raised as Python's own error."""
    monkeypatch.setenv("ADJUDGE_PORT", "9" * 5000)
    with pytest.raises(BadInput) as err:
        Settings.load()
    assert err.value.message.startswith("ADJUDGE_PORT=999") and "..." in err.value.message
    monkeypatch.delenv("ADJUDGE_PORT")
    monkeypatch.setenv("ADJUDGE_UPKEEP_SECONDS", "1e400")
    with pytest.raises(BadInput) as err:
        Settings.load()
    assert err.value.message.startswith("ADJUDGE_UPKEEP_SECONDS=1e400: input should be a finite")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("fee_bp = 800\n", "names 'fee_bp', which is no setting (did you mean fee_bps?)"),
        ("fee_bps = \n", "is not TOML"),
        ("[webhooks]\nbatch = 3\n", "gives webhooks a table or a list"),
    ],
)
def test_a_file_that_is_not_settings_is_refused(text: str, said: str, tmp_path: Path) -> None:
    """A typo, a syntax error or a table: CONFIG_FILE_INVALID, never silently ignored."""
    with pytest.raises(BadInput) as err:
        Settings.load(config=_file(tmp_path, text))
    assert err.value.code == "CONFIG_FILE_INVALID" and said in err.value.message


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    """A settings file named but absent is FILE_UNREADABLE (the defaults are not used instead)."""
    with pytest.raises(BadInput) as err:
        Settings.load(config=tmp_path / "nowhere.toml")
    assert err.value.code == "FILE_UNREADABLE" and "nowhere.toml" in err.value.message


def test_time_spans_read_from_their_settings() -> None:
    """The hours and seconds settings give the time spans the use cases read."""
    s = Settings(price_notice_hours=1.5, webhooks_lease_seconds=90, webhooks_test_window_hours=2)
    assert s.price_notice.total_seconds() == 5400
    assert s.webhooks_lease.total_seconds() == 90
    assert s.webhooks_test_window.total_seconds() == 7200


def _generator() -> ModuleType:
    return load_script("gen_settings_table")


def test_the_guide_table_is_the_settings_object() -> None:
    """``docs/guide/operating.md``'s table is what ``scripts/gen_settings_table.py`` writes,
    one row per setting."""
    generator = _generator()
    page = (ROOT / "docs" / "guide" / "operating.md").read_text(encoding="utf-8")
    assert page == generator.rendered(page), "run: python scripts/gen_settings_table.py"
    for name in NAMES:
        assert f"| `{name}` |" in page and f"`{env_name(name)}`" in page


def test_the_core_and_the_use_cases_read_no_environment() -> None:
    """No module of the pure core or the use cases reads ``os.environ``/``os.getenv``: a
    setting reaches them from the edge (``adjudge serve``), through the settings object."""
    readers = []
    for package in ("autocheck", "kernel", "calls", "market", "receipts", "replay", "app"):
        for path in sorted((ROOT / "src" / "adjudge" / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "os.environ" in text or "getenv" in text:
                readers.append(str(path.relative_to(ROOT)))
    assert readers == []
