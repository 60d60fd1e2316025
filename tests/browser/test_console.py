"""The console in Chromium, for each role: the operator's, a provider's and a poster's
dashboard and the ledger, their numbers checked against the API; filters kept in the URL;
a webhook delivery's attempts; a timed action said, not offered, before its time; and an
accessibility scan (axe-core, vendored) of every page finding nothing serious or critical."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from adjudge.market.money import shown
from adjudge.store import records
from adjudge.webhooks import Sender
from support.browser import Browser
from support.harness import Harness
from support.receiver import Receiver, endpoint
from support.weather import PROVIDER, World

pytestmark = pytest.mark.browser


def _paid_task(h: Harness) -> str:
    tid = h.post("manual", deadline_hours=72)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A summary of the work."})
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True, "reasons": []})
    return tid


def _accessible(b: Browser, page: str) -> None:
    """No serious or critical violation on the page as it stands."""
    found = b.axe()
    assert not found, f"{page}: {found}"


def _numbers(b: Browser, figure: str) -> list[list[str]]:
    """A chart's table of numbers, opened as a reader would, as rows of cell texts."""
    root = b.page.locator(f"#{figure}")
    root.locator("summary").click()
    rows = root.locator("table tbody tr")
    return [r.locator("td").all_inner_texts() for r in rows.all()]


def _world(world: World) -> None:
    """A paid task, a call the provider's terms count as failed and one passed."""
    h = world.h
    h.ok(
        PROVIDER,
        "POST",
        "/tools",
        {
            "contract": {"tool": "weather_unused", "version": "1"},
            "quality": {"declared_failure_rate": "1/4", "sample_gate": 3, "window_days": 7},
        },
    )
    _paid_task(h)
    for answer in ("bad", "good"):
        world.script.answer = answer
        assert world.call({"city": "berlin"}).status_code == 200
    world.script.answer = "good"


def test_the_operator_dashboard_shows_the_apis_numbers(
    world_browser: Browser, world: World
) -> None:
    """The operator's headline amounts, its calls-by-verdict table and its providers list are
    the API's, in USDC; the page passes the accessibility scan."""
    _world(world)
    b, page, h = world_browser, world_browser.page, world.h
    board = h.ok("root", "GET", "/dashboard/operator")
    b.sign_in("root")
    b.open("dashboard")
    page.locator("#money-held svg").wait_for()
    today = board["money"][-1]
    assert page.locator(".now-held").inner_text() == shown(int(today["held"]))
    assert page.locator(".now-provider-holds").inner_text() == shown(int(today["provider_holds"]))
    charged = sum(int(r["charged"]) for r in board["money"])
    assert page.locator(".sum-charged").inner_text() == shown(charged)
    assert page.locator(".sum-fees").inner_text() == shown(200_000)
    calls = _numbers(b, "calls-by-verdict")
    verdicts = board["calls"]["verdicts"]
    assert calls[-1] == [today["day"], *(str(board["calls"]["rows"][-1][v]) for v in verdicts)]
    assert len(calls) == len(board["days"]) == 30
    near = page.locator("table.providers-near tbody tr").first.inner_text()
    assert PROVIDER in near and "1/2 (50%)" in near and "200%" in near
    # Each chart is an image with a name, drawn on the page (no request left for it).
    assert str(page.locator("#money-moved-title").text_content()).startswith("Money moved")
    _accessible(b, "operator dashboard")
    b.shot("console-operator-dashboard")


def test_the_ledger_page_totals_and_lines_are_the_apis(
    world_browser: Browser, world: World, tmp_path: Path
) -> None:
    """The admin's ledger shows the API's totals and newest lines with their receipt links;
    filtering by kind puts the filter in the URL (a stable link) and keeps only that kind; the
    CSV holds every filtered line. The provider's ledger holds only its own accounts."""
    _world(world)
    b, page, h = world_browser, world_browser.page, world.h
    api = h.ok("root", "GET", "/ledger/lines?totals=true")
    b.sign_in("root")
    b.open("ledger")
    page.locator("table.ledger").wait_for()
    t = api["totals"]
    assert page.locator(".total-lines").inner_text() == t["lines"]
    assert page.locator(".total-credits").inner_text() == shown(int(t["credits"]))
    assert page.locator(".total-debits").inner_text() == shown(int(t["debits"]))
    assert page.locator(".total-net").inner_text() == "+0 USDC"
    rows = page.locator("table.ledger tbody tr")
    assert rows.count() == min(50, int(t["lines"]))
    first = api["lines"][0]
    assert shown(abs(int(first["amount"]))) in rows.first.inner_text()
    released = [x for x in api["lines"] if x["receipt_id"]]
    assert released and page.locator("a.receipt-link").count() == len(
        [x for x in api["lines"][:50] if x["receipt_id"]]
    )
    _accessible(b, "ledger")
    b.shot("console-ledger")

    page.get_by_label("Kind").select_option("fee")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/ui/#/ledger?kind=fee")
    expect(page.locator(".total-lines")).to_have_text("2")
    kinds = page.locator("table.ledger tbody tr td:nth-child(3)").all_inner_texts()
    assert kinds == ["fee", "fee"]
    with page.expect_download() as caught:
        page.get_by_role("button", name="Download these lines (ledger.csv)").click()
    saved = tmp_path / "ledger.csv"
    caught.value.save_as(saved)
    table = list(csv.reader(io.StringIO(saved.read_text(encoding="utf-8"))))
    fees = h.ok("root", "GET", "/ledger/lines?kind=fee")["lines"]
    assert table[0][:5] == ["time", "account", "other side", "kind", "amount (USDC)"]
    assert [(r[1], r[3], r[5]) for r in table[1:]] == [
        (x["account"], "fee", x["amount"]) for x in fees
    ]

    b.sign_in(PROVIDER)
    # The header names the provider's held money in USDC (it once printed an element's name).
    assert page.locator("#held").inner_text() == shown(h.balance(f"held:{PROVIDER}"))
    b.open("ledger")
    mine = h.ok(PROVIDER, "GET", "/ledger/lines?totals=true")["totals"]
    # The unfiltered page, not the one the sign-in redrew under the admin's filter.
    expect(page.locator(".total-lines")).to_have_text(mine["lines"])
    assert page.locator(".total-net").inner_text() == "+" + shown(int(mine["net"]))
    accounts = set(page.locator("table.ledger tbody tr td:nth-child(2)").all_inner_texts())
    assert accounts <= {f"wallet:{PROVIDER}", f"held:{PROVIDER}"} and accounts
    assert page.locator("select[name=account]").count() == 1  # a non-admin picks its own
    _accessible(b, "provider's ledger")


def test_the_provider_dashboard_and_its_calls_by_date(world_browser: Browser, world: World) -> None:
    """The provider sees its failure rate against its declared rate and the penalty
    threshold in words, its failing check; its calls page keeps a date filter in the URL."""
    _world(world)
    b, page, h = world_browser, world_browser.page, world.h
    board = h.ok(PROVIDER, "GET", "/dashboard/provider")
    b.sign_in(PROVIDER)
    b.open("dashboard?role=provider")
    page.locator("#failure-rate svg").wait_for()
    assert page.locator(".failure-rate").inner_text() == "1/2 (50%)"
    assert (
        "no count of failures would be improbable enough" in page.locator(".threshold").inner_text()
    )
    assert page.locator("table.failing-checks tbody tr").first.inner_text().split("\t") == [
        "schema",
        "1",
    ]
    assert _numbers(b, "failure-rate")[-1] == [board["days"][-1], "1", "1", "50%"]
    legend = page.locator("#failure-rate ul.legend").inner_text()
    assert "declared failure rate" in legend
    _accessible(b, "provider dashboard")
    b.shot("console-provider-dashboard")

    day = board["days"][-1]
    b.open(f"calls?since={day}&verdict=FAIL")
    page.locator("table.calls tbody tr").first.wait_for()
    assert page.locator("table.calls tbody tr").count() == 1
    assert page.get_by_label("Started from (UTC day)").input_value() == day
    _accessible(b, "calls")


def test_a_delivery_shows_its_payload_and_every_attempt(
    world_browser: Browser, world: World, receiver: Receiver
) -> None:
    """A test event to a failing receiver: the delivery's page lists each attempt with the
    receiver's status and answer, and the payload as sent."""
    b, page, h = world_browser, world_browser.page, world.h
    made = endpoint(h, receiver, "ann")
    receiver.mode = "500"
    delivery = h.ok("ann", "POST", f"/webhooks/endpoints/{made['id']}/test")
    with Sender(allow_private=True) as sender:
        assert h.app.webhooks.deliver_due(sender) == 1
        h.advance(minutes=10)
        assert h.app.webhooks.deliver_due(sender) == 1
    b.sign_in("ann")
    b.open("webhooks")
    page.locator("a.delivery-link").first.click()
    page.wait_for_url(f"**/ui/#/webhooks/deliveries/{delivery['id']}")
    page.locator("table.attempts").wait_for()
    attempts = page.locator("table.attempts tbody tr")
    assert attempts.count() == 2
    assert "500" in attempts.first.inner_text() and "HTTP 500" in attempts.first.inner_text()
    assert '"type": "webhook.test"' in page.get_by_label("Payload").inner_text()
    _accessible(b, "delivery")
    b.shot("console-delivery")


def test_the_poster_dashboard_tasks_search_and_a_timed_action(browser: Browser) -> None:
    """pat's dashboard counts its tasks by state as the API does; the task search keeps its
    filter in the URL; reclaim is not offered before the deadline but says when, and is
    offered after it."""
    b, page, h = browser, browser.page, browser.h
    taken = h.post("manual", title="Summarise the incident report")
    h.ok("ann", "POST", f"/tasks/{taken}/accept")
    h.post("auto", title="Explain escrow", criteria={"min_length": 5})
    board = h.ok("pat", "GET", "/dashboard/poster")
    b.sign_in("pat")
    b.open("dashboard")
    page.locator("#tasks-by-state svg").wait_for()
    counts = {r[0]: int(r[1]) for r in _numbers(b, "tasks-by-state")}
    assert counts == board["tasks_by_state"] and counts["assigned"] == counts["funded"] == 1
    _accessible(b, "poster dashboard")
    b.shot("console-poster-dashboard")

    b.open("tasks")
    page.get_by_label("Search titles").fill("incident")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**/ui/#/tasks?text=incident")
    expect(page.locator("table.tasks tbody tr")).to_have_count(1)
    assert page.locator("table.tasks tbody tr").inner_text().startswith("Summarise")
    _accessible(b, "tasks")

    task: dict[str, Any] = h.ok("pat", "GET", f"/tasks/{taken}")
    b.open(f"tasks/{taken}")
    later = page.locator("p.later", has_text="reclaim the reward")
    later.wait_for()
    assert "after the deadline" in later.inner_text()
    assert task["deadline"][:10] in later.inner_text()
    assert page.get_by_role("button", name="Reclaim after the deadline").count() == 0
    _accessible(b, "task")
    h.advance(hours=73)
    page.reload()
    page.get_by_role("button", name="Reclaim after the deadline").wait_for()


def test_the_verifiers_page_shows_a_page_and_then_the_next(browser: Browser) -> None:
    """56 verifiers: the page lists the first 50 by id, and "More verifiers" the other 6."""
    b, page, h = browser, browser.page, browser.h
    with h.app.unit.store.write() as tx:
        for n in range(55):
            at = h.clock.now()
            records.create_account(tx, f"w{n:02}", ["verifier"], f"adj_w{n}", opt_in=True, at=at)
    b.sign_in("pat")
    b.open("verifiers")
    items = page.locator("main li")
    expect(items).to_have_count(50)
    assert items.first.inner_text().startswith("vera")
    _accessible(b, "verifiers")
    page.get_by_role("button", name="More verifiers").click()
    expect(items).to_have_count(6)
    assert items.last.inner_text().startswith("w54")
    assert page.get_by_role("button", name="More verifiers").count() == 0


def test_the_sign_in_page_says_a_refused_key_once(browser: Browser) -> None:
    """Signed out, the page is the sign-in form with its label; a refused key is said once in
    its alert region — submitted twice, still one error on the page, not one per try nor one
    more from the view behind it. A good key then opens the tasks, the form moves to the header
    and the error is gone; the numbers of a table are aligned right in tabular figures. Signing
    out forgets the key and shows the sign-in page again, nothing of the account left."""
    b, page, h = browser, browser.page, browser.h
    h.post("manual", title="Summarise the incident report")
    page.goto(f"{b.url}/ui/#/tasks")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    _accessible(b, "sign-in page")
    for _ in range(2):
        page.get_by_label("API key").fill("adj_not_a_key")
        page.get_by_role("button", name="Use key").click()
        expect(page.get_by_role("alert")).to_have_count(1)
        expect(page.locator("#key-error")).not_to_be_empty()
        expect(page.locator(".error:visible")).to_have_count(1)
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.locator("main #key-form").count() == 1  # on the page, not in the header
    assert page.evaluate("sessionStorage.getItem('adjudge-key')") == "adj_not_a_key"
    assert page.evaluate("localStorage.length") == 0  # kept in this tab only
    _accessible(b, "sign-in page with an error")
    b.shot("console-sign-in")

    page.get_by_label("API key").fill(h.keys["pat"])
    page.get_by_role("button", name="Use key").click()
    page.locator("#who strong", has_text="pat").wait_for()
    page.locator("table.tasks").wait_for()
    assert page.locator("header #key-form").count() == 1
    expect(page.locator("#key-error")).to_be_empty()
    expect(page.locator(".error:visible")).to_have_count(0)
    reward = page.locator("table.tasks tbody td.num").first
    style = reward.evaluate(
        "e => [getComputedStyle(e).textAlign, getComputedStyle(e).fontVariantNumeric]"
    )
    assert style == ["right", "tabular-nums"]
    _accessible(b, "tasks")

    page.get_by_role("button", name="Sign out").click()  # the key and the account forgotten
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('adjudge-key')") is None
    expect(page.locator("#who")).to_have_text("Not signed in.")
    assert page.locator("table.tasks").count() == 0
