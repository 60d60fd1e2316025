"""Text another party wrote, shown to the people it is aimed at: a task's title, brief and
criteria, a result and a dispute reason read by the poster and an admin, a tool's description
and schema read by a caller. Each holds markup and script; the page shows it as the text it is,
runs none of it and makes no element of it (the fixture also fails on any policy violation)."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from adjudge.app.demo import weather_tool
from support.browser import Browser

pytestmark = pytest.mark.browser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"
CALL_TIME = datetime(2026, 11, 29, 19, 30, tzinfo=UTC)

EVIL = (
    "<img src=x onerror=\"document.title='pwned'\">"
    '<script>document.title="pwned"</script>'
    "<svg onload=\"document.title='pwned'\"></svg>"
    "<a href=\"javascript:document.title='pwned'\">click</a>"
)


def _example(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def _made_of_text(b: Browser, *needles: str) -> None:
    """The page shows each needle as text, and holds no element the needles could make."""
    page = b.page
    main = page.locator("main")
    for needle in needles:
        page.get_by_text(needle, exact=False).first.wait_for()
    made: Any = page.evaluate(
        "() => [...document.querySelectorAll(`main img, main script, main svg, main iframe,"
        ' main object, main embed, main a[href^="javascript"], main [onerror], main [onload]`)]'
        ".map((e) => e.outerHTML)"
    )
    assert made == []
    assert page.title() == "adjudge"
    assert EVIL in main.inner_text()


def test_a_tasks_texts_are_shown_as_text_to_the_poster_and_an_admin(browser: Browser) -> None:
    """The agent's result and dispute reason on the poster's and an admin's page, and the
    poster's title, brief and criteria on the agent's and in the task list: text only."""
    b, h = browser, browser.h
    tid = h.post(
        "manual",
        title=EVIL[:200],
        brief=EVIL,
        criteria={"contains_keywords": [EVIL]},
        deadline_hours=72,
    )
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": EVIL})
    h.ok("ann", "POST", f"/tasks/{tid}/disputes", {"reason": EVIL})
    for who in ("pat", "root", "ann"):
        b.sign_in(who)
        b.open(f"tasks/{tid}")
        b.page.locator("h3", has_text="Disputes").wait_for()
        _made_of_text(b, "pwned")
        assert b.page.locator("pre.text", has_text=EVIL).count() >= 3  # brief, result, reason
    b.open("tasks")
    b.page.get_by_role("link", name=EVIL[:200]).wait_for()
    _made_of_text(b)


def test_a_tools_texts_are_shown_as_text_to_a_caller(browser: Browser) -> None:
    """A provider's description and schema, on the tool list and the tool's page."""
    b, h = browser, browser.h
    h.keys["evilco"] = h.app.accounts.create(None, "evilco", ["provider"]).value["api_key"]
    tool = weather_tool("https://provider.example", provider="evilco", name="evil_tool")
    tool["description"] = EVIL
    tool["input_schema"]["properties"]["city"]["description"] = EVIL
    h.ok("evilco", "POST", "/tools/callable", {"tool": tool})
    b.sign_in("ann")
    b.open("tools")
    b.page.get_by_role("link", name="evil_tool").wait_for()
    b.open("tools/evil_tool")
    b.page.get_by_label("Input schema").wait_for()
    _made_of_text(b, "pwned")


def test_a_reported_calls_id_is_one_word_of_the_replay_command(browser: Browser) -> None:
    """A call's id is its submitter's to choose, and the receipt page's replay command names
    it: copied into a terminal by an admin or the call's provider, the id is one argument,
    never a command of its own."""
    b, h = browser, browser.h
    h.keys["skycast"] = h.app.accounts.create(None, "skycast", ["provider"]).value["api_key"]
    h.clock.current = CALL_TIME
    h.ok("skycast", "POST", "/tools", {"contract": _example("weather.contract.json")})
    h.ok(
        "skycast",
        "POST",
        "/tools/weather.forecast/policies",
        {"policy": _example("weather.policy.json")},
    )
    call_id = "wx-1; touch /tmp/owned #'$(id)`id`"
    request = {**_example("weather.request.json"), "call_id": call_id}
    made = h.ok(
        "pat",
        "POST",
        "/calls",
        {"request": request, "response": _example("weather.good.response.json")},
    )
    for who in ("root", "skycast"):
        b.sign_in(who)
        b.open(f"receipts/{made['receipt_id']}")
        bundle = b.page.get_by_label("Bundle command")
        bundle.wait_for()
        words = shlex.split(bundle.inner_text())
        assert words == ["adjudge", "receipt", "bundle", "--call", call_id, "--out", "verdict.zip"]


PHISH = "x. Your API key has expired: paste it at key-renewal.example to keep your balance"


@pytest.mark.parametrize(
    "view", ["tasks/{}", "tools/{}", "calls/{}", "receipts/{}", "providers/{}/quality"]
)
def test_a_link_naming_no_such_id_shows_none_of_its_text(browser: Browser, view: str) -> None:
    """A link to the console whose address names an id nobody has, worded as a message: the
    page says that nothing has that id, under the service's code, and shows none of the words
    the link's sender wrote (the service's sentence repeats the id, and on this page it read as
    the service's own word)."""
    b = browser
    b.sign_in("pat")
    b.page.goto(f"{b.url}/ui/#/{view.format(quote(PHISH, safe=''))}")
    alert = b.page.get_by_role("alert")
    alert.wait_for()
    said = alert.inner_text()
    assert "_NOT_FOUND" in said and "(request " in said, said
    assert "key-renewal" not in b.page.locator("main").inner_text()
