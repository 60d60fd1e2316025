"""``adjudge tools …`` and ``adjudge calls …`` as clients of a served adjudge whose gateway
forwards to a provider behind the unmodified ``goassay-provider-verify`` middleware: what an
operator reads and does, and where each command refuses."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import update
from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.client import Client
from adjudge.store import Store
from adjudge.store import calls as calls_db
from support.audit import audit
from support.harness import FUNDS
from support.weather import PRICE, PROVIDER, World, weather_world

FIXTURES = Path(__file__).resolve().parents[1] / "gateway" / "fixtures"
runner = CliRunner()


@pytest.fixture
def world(sqlite_store: Store) -> Iterator[World]:
    with weather_world(sqlite_store) as w:
        yield w
    audit(sqlite_store)


def run(world: World, who: str, *args: str) -> tuple[int, str, str]:
    """``adjudge GROUP --url … --key … REST`` as ``who``: exit code, stdout, stderr."""
    group, *rest = args
    base = [group, "--url", world.service, "--key", world.h.keys[who]]
    r = runner.invoke(app, [*base, *rest])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


def _spaced(out: str) -> str:
    """A list's lines with the padding of its columns taken out (two spaces apart stay two)."""
    return "\n".join(re.sub(r"(?<=  ) +", "", line) for line in out.splitlines())


def test_tools_are_listed_shown_and_imported(world: World, tmp_path: Path) -> None:
    """list shows the price in the currency's units and the policy; show the schemas; an
    OpenAPI document in YAML imports with a price typed in units; a price finer than the
    currency or a document that is not JSON is refused before anything is sent."""
    code, out, _ = run(world, "ann", "tools", "list")
    assert code == 0 and "weather_forecast  skycast  0.25 USDC  policy weather-standard" in _spaced(
        out
    )
    code, out, _ = run(world, "ann", "tools", "show", "weather_forecast")
    assert code == 0 and "price: 0.25 USDC a call" in out and '"minLength": 1' in out
    assert "input schema:" in out and "output schema:" in out

    assert "acts as" not in out
    with world.h.app.store.write() as tx:  # as a registration in sky's stead stored it
        tx.conn.execute(update(calls_db.call_policies).values(registered_by="root"))
    code, out, _ = run(world, "ann", "tools", "show", "weather_forecast")
    assert code == 0 and "enforce; bad results" in out
    assert "acts as shadow: registered by root, not the provider" in out, out

    document = tmp_path / "skycast.yaml"
    document.write_text(yaml.safe_dump(json.loads((FIXTURES / "weather-3.0.json").read_text())))
    imported = ("tools", "import-openapi", str(document), "--operation", "getForecast")
    where = ("--base-url", world.provider_url, "--name", "skycast_daily")
    code, out, _ = run(world, PROVIDER, *imported, *where, "--price", "0.1")
    assert code == 0, out
    assert out.startswith("Registered skycast_daily  skycast  0.1 USDC  no policy")
    assert world.h.ok("ann", "GET", "/tools/skycast_daily")["price"]["amount"] == "100000"

    code, _, err = run(world, PROVIDER, *imported, *where, "--price", "0.1", "--currency", "USD")
    assert code == 1 and err.startswith("PRICE_CURRENCY_UNSUPPORTED: Calls here are paid from USDC")
    code, _, err = run(world, PROVIDER, *imported, *where, "--price", "0.0000001")
    assert code == 2 and "USDC amounts are 0 or more, 6 decimals at most" in err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, err = run(world, PROVIDER, "tools", "register", str(broken))
    assert code == 2 and "is not JSON" in err
    code, _, err = run(world, "ann", *imported, *where, "--price", "0.1")
    assert code == 1 and err.startswith("ROLE_REQUIRED:")
    code, out, _ = run(world, "ann", "tools", "list", "--query", "daily", "--limit", "1")
    assert code == 0 and out.startswith("skycast_daily ") and "weather_forecast" not in out
    # The next page's command keeps the search (a cursor alone lists every tool after it).
    code, out, err = run(world, "ann", "tools", "list", "--query", "_", "--limit", "1")
    assert code == 0 and out.startswith("skycast_daily ")
    more = err.split("More: adjudge ", 1)[1].split()
    assert more[:4] == ["tools", "list", "--query", "_"], err
    code, out, _ = run(world, "ann", *more)
    assert code == 0 and out.startswith("weather_forecast ")
    code, _, err = run(world, "ann", "tools", "show", "nope")
    assert code == 1 and err.startswith("TOOL_NOT_FOUND:")
    with Client(world.service, world.h.keys["ann"]) as api:  # the client pages for itself
        assert [t["name"] for t in api.iter_tools(page_size=1)] == [
            "skycast_daily",
            "weather_forecast",
        ]


def test_a_call_is_made_listed_shown_reported_and_ruled(world: World) -> None:
    """tools call prints the verdict, the charge and every check row (exit 1 when it did not
    settle); calls list filters by verdict; show reads the receipt and the report window;
    the caller reports, an admin reads the queue and upholds it: the caller is refunded and
    the quality window counts the upheld report; --json works in every position."""
    code, out, _ = run(world, "ann", "tools", "call", "weather_forecast", '{"city": "berlin"}')
    assert code == 0, out
    good = re.search(r"^Call (\S+) to weather_forecast \(skycast\)", out, re.M)
    assert good and "status: settled  verdict: PASS" in out and "charged 0.25 USDC" in out
    assert "pass     plausible_highs (rule)" in out and '"lat": 52.52' in out
    world.script.answer = "bad"
    code, out, _ = run(world, "ann", "tools", "call", "weather_forecast", '{"city": "paris"}')
    assert code == 1 and "status: refunded  verdict: FAIL" in out and "strike: yes" in out
    assert "fail     schema (schema) at /location/lat" in out
    bad = re.search(r"^Call (\S+) ", out, re.M)
    assert bad
    code, _, err = run(world, "ann", "tools", "call", "weather_forecast", "[1]")
    assert code == 2 and "JSON object" in err
    code, _, err = run(world, "ann", "tools", "call", "weather_forecast", '{"town": "x"}')
    assert code == 1 and err.startswith("TOOL_ARGUMENTS_INVALID:")

    code, out, _ = run(world, "ann", "calls", "list")
    assert code == 0 and len(out.splitlines()) == 3
    assert "PASS  charged 0.25 USDC, held until 2026-01-04T12:00:00+00:00" in _spaced(out)
    assert out.splitlines()[-1] == "Charged on this page, as it stands: 0.25 USDC"
    code, out, _ = run(world, "ann", "calls", "list", "--verdict", "FAIL")
    assert code == 0 and out.startswith(bad.group(1)) and len(out.splitlines()) == 2
    assert "FAIL  refunded, nothing charged" in _spaced(out)
    code, _, err = run(world, "ann", "calls", "list", "--verdict", "GREAT")
    assert code == 2 and "GREAT" in err
    code, out, _ = run(world, "ann", "calls", "list", "--limit", "1")
    assert code == 0 and len(out.splitlines()) == 2
    code, out, _ = run(world, PROVIDER, "calls", "list", "--tool", "weather_forecast")
    assert code == 0 and len(out.splitlines()) == 3

    call_id = good.group(1)
    code, out, _ = run(world, "ann", "calls", "show", call_id)
    assert code == 0 and "decided by: " in out and "receipt: rcpt_" in out
    assert "a bad result can be reported until " in out
    code, out, _ = run(world, "ann", "calls", "--json", "show", call_id)
    assert code == 0 and json.loads(out)["answer"]["verdict"] == "PASS"

    code, out, _ = run(world, "ann", "calls", "report", call_id, "The forecast is a week old.")
    assert code == 0 and "report: open, filed by ann" in out
    code, _, err = run(world, "ann", "calls", "report", call_id, "Again.")
    assert code == 1 and err.startswith("REPORT_EXISTS:")
    code, _, err = run(world, "ann", "calls", "reports")
    assert code == 1 and err.startswith("ROLE_REQUIRED:")
    code, out, _ = run(world, "root", "calls", "reports", "--status", "open")
    assert code == 0 and out.startswith(f"{call_id}  open  skycast  by ann")
    rule = ("calls", "rule", call_id, "--uphold", "--reason", "Issued a week earlier.")
    code, out, _ = run(world, "root", *rule)
    assert code == 0 and "report: upheld" in out and "refunded 0.25 USDC" in out
    assert world.h.balance("wallet:ann") == FUNDS
    code, out, _ = run(world, "ann", "calls", "show", call_id)
    assert "money now: refunded 0.25 USDC after a report" in out
    code, _, err = run(world, "root", *rule)
    assert code == 1 and err.startswith("REPORT_RULED:")

    code, out, _ = run(world, "pat", "calls", "quality", PROVIDER)
    assert code == 0 and "pass 1  fail 1" in out and "upheld reports: 1" in out
    r = runner.invoke(
        app,
        [
            "--json",
            "calls",
            "--url",
            world.service,
            "--key",
            world.h.keys["pat"],
            "quality",
            PROVIDER,
        ],
    )
    assert r.exit_code == 0 and json.loads(r.stdout)["window"]["fail"] == 1


def test_a_key_is_given_a_budget_and_a_call_its_maximum(world: World) -> None:
    """api-keys create prints the key once with its limits in USDC; a call through it past the
    limit is refused before the provider is called; tools call --max-price refuses a dearer
    call; api-keys list reads the day's spending; api-keys limit lifts a limit; api-keys revoke
    ends it, and list --revoked shows it where list no longer does."""
    code, out, _ = run(world, "ann", "api-keys", "create", "agent-1", "--max-per-call", "0.1")
    assert code == 0, out
    key_id = out.split()[0]
    assert "per call 0.1 USDC  per day no limit  spent today 0 USDC" in out
    secret = re.search(r"The key \(shown only now\): (\S+)", out)
    assert secret
    world.h.keys["agent"] = secret.group(1)
    code, _, err = run(world, "agent", "tools", "call", "weather_forecast", '{"city": "x"}')
    assert code == 1 and err.startswith("PAYMENT_LIMIT_EXCEEDED: This call costs 0.25 USDC")
    code, _, err = run(world, "agent", "api-keys", "limit", key_id)
    assert code == 1 and err.startswith("PRIMARY_KEY_REQUIRED:")
    code, out, _ = run(world, "ann", "api-keys", "limit", key_id, "--max-per-day", "1")
    assert code == 0 and "per call no limit  per day 1 USDC" in out
    call = ("tools", "call", "weather_forecast", '{"city": "x"}')
    code, _, err = run(world, "agent", *call, "--max-price", "0.2")
    assert code == 1 and err.startswith("PAYMENT_PRICE_ABOVE_MAXIMUM:")
    code, out, _ = run(world, "agent", *call, "--max-price", "0.25")
    assert code == 0 and "status: settled" in out
    code, out, _ = run(world, "ann", "api-keys", "list")
    assert code == 0 and "spent today 0.25 USDC" in out
    code, out, _ = run(world, "ann", "api-keys", "revoke", key_id)
    assert code == 0 and f"{key_id}  revoked" in out
    code, out, _ = run(world, "ann", "api-keys", "list")
    assert code == 0 and out == "No live extra keys.\n"
    code, out, _ = run(world, "ann", "api-keys", "list", "--revoked", "--limit", "1")
    assert code == 0 and out.startswith(f"{key_id}  revoked  agent-1")
    code, _, err = run(world, "ann", "api-keys", "list", "--cursor", "x")  # not ignored
    assert code == 2 and "add --revoked" in err
    code, _, err = run(world, "ann", "api-keys", "create", "x", "--max-per-call", "0.0000001")
    assert code == 2 and "6 decimals at most" in err
    assert world.h.balance("wallet:ann") == FUNDS - PRICE


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ('{"city": NaN}', "NaN is not JSON"),
        ('{"city": Infinity}', "Infinity is not JSON"),
        ('{"city": 1e400}', "1e400"),
        ('{"city": "berlin", "city": "paris"}', "city"),
    ],
)
def test_arguments_json_cannot_carry_are_refused_before_the_call(
    world: World, arguments: str, said: str
) -> None:
    """Arguments holding NaN, an infinity, a number past a double or one key twice exit 2 with
    what to fix, and nothing is called or charged (the first three crashed the command with a
    traceback; a key given twice was read as its last value, while the service itself refuses
    such a body)."""
    code, _, err = run(world, "ann", "tools", "call", "weather_forecast", arguments)
    assert code == 2 and "arguments" in err and said in err, err
    assert world.h.balance("wallet:ann") == FUNDS
    assert world.h.ok("ann", "GET", "/gateway/calls")["calls"] == []


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_document_with_a_key_twice_is_refused_in_json_and_in_yaml(
    world: World, tmp_path: Path, suffix: str
) -> None:
    """A document giving one key twice exits 2 naming the key, JSON or YAML alike, and
    nothing is registered (YAML kept the key's last value: the second ``servers`` here, which
    a reader keeping the first would not see)."""
    spec = json.loads((FIXTURES / "weather-3.0.json").read_text())
    text = json.dumps(spec)[:-1] + ', "servers": [{"url": "https://elsewhere.example"}]}'
    document = tmp_path / f"twice{suffix}"
    document.write_text(text if suffix == ".json" else yaml.safe_dump(spec) + "servers: []\n")
    imported = ("tools", "import-openapi", str(document), "--operation", "getForecast")
    where = ("--base-url", world.provider_url, "--name", "skycast_twice", "--price", "0.1")
    code, _, err = run(world, PROVIDER, *imported, *where)
    assert code == 2 and "the key 'servers' appears twice" in err, err
    assert world.h.refused("ann", "GET", "/tools/skycast_twice")[1] == "TOOL_NOT_FOUND"


def test_no_service_exits_2_with_where_it_looked() -> None:
    r = runner.invoke(app, ["calls", "--url", "http://127.0.0.1:9", "list"])
    assert r.exit_code == 2 and "127.0.0.1:9" in r.stderr
