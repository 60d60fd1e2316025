"""The gateway's pages walked in Chromium over the weather provider's world: the tools and a
tool's schemas, calls filtered and read check by check, a report filed by the caller and upheld
by an admin (the refund in the caller's balance), the provider's quality, a webhook endpoint
with its secret shown once, a test event delivered and replayed, and refusals on the page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from sqlalchemy import update

from adjudge.store import calls
from adjudge.webhooks import Sender
from support.browser import Browser
from support.receiver import Receiver, drain, endpoint
from support.weather import PROVIDER, World

pytestmark = pytest.mark.browser


def _call_ids(world: World, *answers: str) -> list[str]:
    """Make one paid call as ann per scripted answer; their ids, in order."""
    ids = []
    for answer in answers:
        world.script.answer = answer
        r = world.call({"city": "berlin"})
        assert r.status_code == 200, r.text
        ids.append(r.json()["intentId"])
    world.script.answer = "good"
    return ids


def test_the_tools_page_lists_the_tool_and_shows_its_schemas(
    world_browser: Browser, world: World
) -> None:
    """The tool is listed with its price in its currency's units and its policy; a search that
    matches nothing says so; the tool's page shows its endpoint, both schemas as JSON and its
    contract mapping, and links to its calls and its provider's quality (no observations yet)."""
    b, page = world_browser, world_browser.page
    b.sign_in("ann")
    b.open("tools")
    row = page.locator("table.tools tbody tr", has_text="weather_forecast")
    row.wait_for()
    text = row.inner_text()
    assert "0.25 USDC" in text and "weather-standard version 1" in text and PROVIDER in text
    b.shot("tools")
    page.get_by_label("Search tools").fill("tide tables")
    page.get_by_role("button", name="Search").click()
    page.get_by_text("No tool matches.").wait_for()
    assert page.url.endswith("#/tools?query=tide+tables")
    page.get_by_label("Search tools").fill("forecast")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="weather_forecast").click()
    page.locator("code.endpoint").wait_for()
    assert page.locator("code.endpoint").inner_text() == "GET /v1/forecast/{city}"
    assert "shown to the tool's provider only" in page.locator("dl.facts").nth(1).inner_text()
    assert '"minLength": 1' in page.get_by_label("Input schema").inner_text()
    output = page.get_by_label("Output schema").inner_text()
    assert '"maximum": 90' in output and output.startswith("{\n")
    mapping = page.locator("table.mapping tbody tr", has_text="issued_at").inner_text()
    assert "issued" in mapping.split("issued_at", 1)[1]
    assert page.locator("table.placements").inner_text().count("path") == 1
    assert page.locator("a.tool-calls").get_attribute("href") == "#/calls?tool=weather_forecast"
    b.shot("tool")
    page.locator("dd a.provider-link").click()
    page.locator(".failure-rate", has_text="no observations").wait_for()
    page.get_by_text("This provider declared no quality terms").wait_for()


def test_a_policy_registered_in_the_providers_stead_reads_as_acting_as_shadow(
    world_browser: Browser, world: World
) -> None:
    """The tool's page says an enforcing policy another account registered in its provider's
    stead (before that was refused) acts as shadow, and who registered it."""
    b, page = world_browser, world_browser.page
    with world.h.app.store.write() as tx:
        tx.conn.execute(update(calls.call_policies).values(registered_by="root"))
    b.sign_in("ann")
    b.open("tools/weather_forecast")
    page.locator("code.endpoint").wait_for()
    facts = page.locator("dl.facts").first.inner_text()
    assert "weather-standard version 1 (enforce, acting as shadow: registered by root" in facts


def test_calls_are_listed_filtered_and_read_check_by_check(
    world_browser: Browser, world: World
) -> None:
    """A good, a bad and a failed call are listed with their status, verdict (as words) and
    charge; the verdict filter narrows the list; the bad call's page lists every check row and
    links its receipt; the failed call's page shows its request error."""
    b, page = world_browser, world_browser.page
    good, bad, broken = _call_ids(world, "good", "bad", "error")
    b.sign_in("ann")
    b.open("calls")
    rows = page.locator("table.calls tbody tr")
    rows.first.wait_for()
    assert rows.count() == 3
    passed = rows.filter(has_text="PASS").inner_text()  # one clock tick: the order is by id
    assert "settled" in passed and "0.25 USDC" in passed
    assert "held until" in passed  # the provider is paid when the report window closes
    listed = page.locator("table.calls tbody tr", has_text="FAIL").inner_text()
    assert "refunded" in listed and "nothing charged" in listed
    assert "no verdict" in page.locator("main").inner_text()
    b.shot("calls")
    page.get_by_label("Verdict").select_option("FAIL")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/#/calls?verdict=FAIL")
    expect(rows).to_have_count(1)
    assert "FAIL" in rows.first.inner_text()
    rows.first.locator("a").first.click()
    page.wait_for_url(f"**/#/calls/{bad}")
    checks = page.locator("table.call-checks tbody tr")
    checks.first.wait_for()
    assert checks.count() == 5
    first = checks.nth(0).inner_text()
    assert "schema" in first and "fail" in first and "smaller than or equal to 90" in first
    assert "not run" in checks.nth(1).inner_text()
    main = page.locator("main").inner_text()
    assert "not_run" not in main and "clause: veto by 'schema' -> FAIL" in main
    assert "refund" in main and "a strike against the provider" in main
    assert "not reportable: nothing was charged" in main
    b.shot("call-failed-checks")
    page.locator("a.receipt-link").click()
    page.locator(".banner .big", has_text="FAIL").wait_for()

    b.open(f"calls/{broken}")
    page.locator(".call-error").wait_for()
    error = page.locator(".call-error").inner_text()
    assert "Request error: request error" in error and "GATEWAY_PROVIDER_5XX" in error
    b.open(f"calls/{good}")
    page.get_by_label("Output").wait_for()
    assert '"lat": 52.52' in page.get_by_label("Output").inner_text()


def test_a_report_is_filed_upheld_and_refunded(world_browser: Browser, world: World) -> None:
    """The caller reports a settled call in its form; an admin finds it in the review queue
    and upholds it in the ruling form; the caller's balance shows the refund, and the
    provider's quality page counts the upheld report apart from its (unchanged) rate."""
    b, page = world_browser, world_browser.page
    (call_id,) = _call_ids(world, "good")
    b.sign_in("ann")
    assert page.locator("#balance").inner_text() == "99.75 USDC"  # 0.25 USDC paid
    b.open(f"calls/{call_id}")
    assert page.locator(".money-now").inner_text().startswith("0.25 USDC, held until ")
    page.get_by_label("What is wrong with the result").fill("The highs are from last week.")
    b.shot("call-report-form")
    page.get_by_role("button", name="Report a bad result").click()
    page.locator(".report .status", has_text="open").wait_for()
    assert page.get_by_role("button", name="Report a bad result").count() == 0
    assert world.h.ok("root", "GET", "/call-reports?status=open")["reports"][0]["reason"] == (
        "The highs are from last week."
    )

    b.sign_in("root")
    b.open("reports")
    queue = page.locator("table.reports tbody tr")
    queue.first.wait_for()
    assert queue.count() == 1 and "The highs are from last week." in queue.first.inner_text()
    b.shot("review-queue")
    queue.first.get_by_role("link", name=call_id).click()
    page.get_by_label("Ruling on the report").select_option("upheld")
    page.get_by_label("Reasons for the ruling").fill("The forecast was issued a week earlier.")
    page.get_by_role("button", name="Rule on the report").click()
    page.locator(".report .status", has_text="upheld").wait_for()
    assert page.locator(".report .refunded").inner_text() == "0.25 USDC"
    assert "The forecast was issued a week earlier." in page.locator(".report").inner_text()
    b.shot("call-report-upheld")
    b.open("reports?status=open")
    page.get_by_text("No open reports.").wait_for()

    b.sign_in("ann")
    assert page.locator("#balance").inner_text() == "100 USDC"
    b.open(f"calls/{call_id}")
    assert page.locator(".money-now").inner_text() == "0.25 USDC refunded after a report"
    page.locator("a.receipt-link").click()
    ruling = page.locator("a.superseded-by")
    ruling.wait_for()
    ruling.click()
    page.locator("a.supersedes").wait_for()  # and back: the ruling names what it replaced
    b.shot("receipt-superseded")
    b.open(f"providers/{PROVIDER}/quality")
    counts = page.locator("table.quality-counts tbody tr")
    counts.wait_for()
    assert counts.inner_text().split() == ["1", "0", "0", "0", "0", "1"]
    assert "0%" in page.locator(".failure-rate").inner_text()
    b.shot("provider-quality")


def test_a_stale_form_and_a_non_admin_see_the_refusal(world_browser: Browser, world: World) -> None:
    """A report form loaded before the call was reported shows REPORT_EXISTS with its sentence
    and request id when sent; the review queue tells a non-admin it is for admins."""
    b, page = world_browser, world_browser.page
    (call_id,) = _call_ids(world, "good")
    b.sign_in("ann")
    b.open(f"calls/{call_id}")
    page.get_by_label("What is wrong with the result").fill("Stale highs.")
    world.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "Filed elsewhere."})
    page.get_by_role("button", name="Report a bad result").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text().startswith("REPORT_EXISTS: ")
    assert "(request " in alert.inner_text()
    b.shot("call-report-refused")
    b.open("reports")
    page.get_by_text("The review queue of reported calls is for admins.").wait_for()


def test_a_webhook_endpoint_shows_its_secret_once_and_replays(
    world_browser: Browser, world: World, receiver: Receiver, sender: Sender
) -> None:
    """An endpoint added in the page shows its secret once (the receiver verifies deliveries
        with it); a test event appears in the delivery log, delivered by the worker; Replay sends
        it again under the same webhook-id; the log's filter narrows it; a replay to an endpoint
    disabled meanwhile shows its refusal."""
    b, page = world_browser, world_browser.page
    b.sign_in("ann")
    b.open("webhooks")
    page.get_by_text("No endpoints yet.").wait_for()
    page.get_by_label("Endpoint URL").fill(receiver.url("ann"))
    page.get_by_label("Event types").fill("webhook.test, call.settled")
    page.get_by_label("Description").fill("the marketplace")
    page.get_by_role("button", name="Add endpoint").click()
    secret = page.get_by_label("Signing secret")
    secret.wait_for()
    assert secret.inner_text().startswith("whsec_")
    assert "shown only this once" in page.locator(".secret").inner_text()
    receiver.secrets["/ann"] = secret.inner_text()
    row = page.locator("table.endpoints tbody tr")
    assert "call.settled, webhook.test" in row.inner_text() and "enabled" in row.inner_text()
    b.shot("webhooks-secret")
    page.reload()
    row.wait_for()
    assert page.get_by_label("Signing secret").count() == 0  # shown once: no read returns it

    page.get_by_role("button", name="Send a test event").click()
    page.locator(".notice", has_text="A test event is queued").wait_for()
    delivery = page.locator("table.deliveries tbody tr")
    assert "webhook.test" in delivery.inner_text() and "pending" in delivery.inner_text()
    assert drain(world.h, sender) == 1
    page.reload()
    delivery.filter(has_text="delivered").wait_for()
    assert "1 of " in delivery.inner_text() and "204" in delivery.inner_text()
    first = receiver.verified("ann")
    assert [r.payload["type"] for r in first] == ["webhook.test"]
    b.shot("webhooks-delivered")

    page.get_by_role("button", name="Replay").click()
    page.locator(".notice", has_text="is sent again now").wait_for()
    assert "pending" in delivery.inner_text() and "0 of " in delivery.inner_text()
    assert drain(world.h, sender) == 1
    page.reload()
    delivery.filter(has_text="delivered").wait_for()
    assert delivery.locator("td").nth(8).inner_text() == "1"  # one replay
    again = receiver.verified("ann")
    assert len(again) == 2 and again[1].msg_id == first[0].msg_id
    b.shot("webhooks-replayed")

    page.get_by_label("Delivery status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    page.get_by_text("No deliveries.").wait_for()
    assert page.url.endswith("#/webhooks?status=failed")

    b.open("webhooks")
    delivery.wait_for()
    world.h.ok("ann", "DELETE", f"/webhooks/endpoints/{first[0].payload['data']['endpoint_id']}")
    page.get_by_role("button", name="Replay").click()  # a page loaded before the endpoint went
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text().startswith("WEBHOOK_ENDPOINT_DISABLED: ")
    page.reload()
    row.filter(has_text="disabled").wait_for()
    assert page.get_by_role("button", name="Send a test event").count() == 0


def test_the_delivery_log_pages_by_its_cursor(
    world_browser: Browser, world: World, receiver: Receiver
) -> None:
    """Past a page of deliveries, "Older deliveries" shows the rest (the log's next_cursor)."""
    b, page = world_browser, world_browser.page
    made = endpoint(world.h, receiver, "ann")
    for i in range(51):
        if i and i % 10 == 0:
            world.h.advance(hours=1)  # an endpoint takes 10 test events an hour
        world.h.ok("ann", "POST", f"/webhooks/endpoints/{made['id']}/test")
    b.sign_in("ann")
    b.open("webhooks")
    rows = page.locator("table.deliveries tbody tr")
    rows.first.wait_for()
    assert rows.count() == 50
    page.get_by_role("button", name="Older deliveries").click()
    expect(rows).to_have_count(1)
    assert page.get_by_role("button", name="Older deliveries").count() == 0


def test_a_calls_receipt_shows_its_decisions_amounts_in_usdc(
    world_browser: Browser, world: World
) -> None:
    """The signed decision on a paid call's receipt page: the price and the charge read in
    USDC, as every amount on the page does, their minor units beside them (they showed as the
    bare 250000 beside "USDC")."""
    b, page = world_browser, world_browser.page
    (call_id,) = _call_ids(world, "good")
    b.sign_in("ann")
    b.open(f"calls/{call_id}")
    page.locator("a.receipt-link").click()
    page.locator(".banner .big", has_text="PASS").wait_for()
    rows = page.locator("dl.facts dt", has_text="chargeMinor")
    rows.first.wait_for()
    for name in ("priceMinor", "chargeMinor"):
        term = page.locator("dl.facts dt", has_text=name).first
        value = term.locator("xpath=following-sibling::dd[1]").inner_text()
        assert value == "0.25 USDC (250000 minor units)", (name, value)
