"""Every form that moves money, sent twice at once — a double click, two quick clicks, Enter
pressed twice — moves it once: the form sends one request, under one Idempotency-Key, and is
disabled while that request is in flight; the ledger shows one movement and the page no
refusal. Each form is walked once per gesture, each time on a task (or call) of its own."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest

from adjudge.market import seal
from support.browser import Browser
from support.harness import Harness
from support.weather import PRICE, World

pytestmark = pytest.mark.browser

GESTURES = ("double-click", "two clicks", "Enter twice")
GOOD = "A hash chain links each record to the digest of the one before it."
REWARD = 2_000_000
PAID = {"wallet:ann": 1_800_000, "platform:fees": 200_000}  # a pass: 90% and the 10% fee
REFUNDED = {"wallet:pat": REWARD}
SALT = "s" * 32


@dataclass
class Sent:
    """The state-changing requests the page sent: (path, Idempotency-Key)."""

    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def record(self, request: Any) -> None:
        if request.method != "GET" and "/api/v1/" in request.url:
            self.requests.append(
                (urlsplit(request.url).path, request.headers.get("idempotency-key"))
            )


@pytest.fixture
def sent(browser: Browser) -> Iterator[Sent]:
    """What the page sends from now on."""
    seen = Sent()
    browser.page.on("request", seen.record)
    yield seen


def _press(b: Browser, name: str | Any, gesture: str) -> None:
    """Send the form of the button named ``name`` (or this button) twice at once, by
    ``gesture``."""
    page = b.page
    button = page.get_by_role("button", name=name, exact=True) if isinstance(name, str) else name
    button.wait_for()
    if gesture == "double-click":
        button.dblclick()
    elif gesture == "two clicks":
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.click(x, y)
        page.mouse.click(x, y)
    else:
        # Enter in the form's text field submits it (implicit submission); a form without
        # one is sent by Enter on its focused button.
        field_ = button.locator("xpath=ancestor::form").locator("input[type=text]")
        (field_.first if field_.count() else button).focus()
        page.keyboard.press("Enter")
        page.keyboard.press("Enter")


@dataclass(frozen=True)
class Form:
    """One money form: who uses it, on which task (``ready`` makes one and says its page),
    what to fill, the button, the API path it posts to, what shows once it is done, and what
    must have moved (balance changes) and be true after."""

    who: str
    ready: Callable[[Harness], tuple[str, str]]  # (page to open, task id)
    button: str
    path: str
    done: Callable[[Browser, str], None]
    moved: dict[str, int]
    after: Callable[[Harness, str], None]
    fill: Callable[[Browser], None] = lambda b: None


def _posted(h: Harness, mode: str = "manual") -> str:
    return h.post(mode, deadline_hours=72)


def _taken(h: Harness, mode: str = "manual") -> str:
    tid = _posted(h, mode)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    return tid


def _delivered(h: Harness, mode: str = "manual") -> str:
    tid = _taken(h, mode)
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    return tid


def _page(tid: str) -> tuple[str, str]:
    return f"tasks/{tid}", tid


def _status(words: str) -> Callable[[Browser, str], None]:
    def wait(b: Browser, _: str) -> None:
        b.page.locator("dl.facts .status", has_text=words).wait_for()

    return wait


def _task(**expected: Any) -> Callable[[Harness, str], None]:
    def check(h: Harness, tid: str) -> None:
        task = h.ok("pat", "GET", f"/tasks/{tid}")
        assert {k: task[k] for k in expected} == expected

    return check


def _late(h: Harness, tid: str, hours: float) -> str:
    h.advance(hours=hours)
    return tid


def _escalated(h: Harness) -> str:
    tid = _delivered(h)
    h.advance(hours=73)
    h.ok("pat", "POST", f"/tasks/{tid}/reclaim")
    h.advance(days=14)
    return tid


def _disputed(h: Harness) -> str:
    tid = _delivered(h)
    h.ok("pat", "POST", f"/tasks/{tid}/disputes", {"reason": "Not what was asked."})
    return tid


def _sealed(h: Harness) -> str:
    """An auto task sealed on the answer "Canberra", delivered and waiting for its reveal."""
    tid = h.post(
        "auto",
        deadline_hours=72,
        criteria={"max_length": 200},
        seal=seal.commit({"expected_answer": "Canberra"}, SALT),
    )
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Canberra is the capital."})
    h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    return tid


def _posted_once(h: Harness, title: str) -> None:
    mine = [t for t in h.ok("pat", "GET", "/tasks?limit=200")["tasks"] if t["title"] == title]
    assert len(mine) == 1, mine


def _one_dispute(h: Harness, tid: str) -> None:
    task = h.ok("pat", "GET", f"/tasks/{tid}")
    assert task["status"] == "disputed" and len(task["disputes"]) == 1, task["disputes"]


TASK_FORMS = {
    "accept": Form(
        "ann",
        lambda h: _page(_posted(h)),
        "Take this task",
        "/accept",
        _status("assigned"),
        {},
        _task(status="assigned", agent="ann"),
    ),
    "cancel": Form(
        "pat",
        lambda h: _page(_posted(h)),
        "Cancel and refund",
        "/cancel",
        _status("cancelled"),
        REFUNDED,
        _task(ending="refunded_on_cancel"),
    ),
    "release": Form(
        "pat",
        lambda h: _page(_late(h, _taken(h), 25)),
        "Release the agent (24 h after it took the task)",
        "/release",
        _status("funded"),
        {},
        _task(status="funded", agent=None),
    ),
    "reclaim": Form(
        "pat",
        lambda h: _page(_late(h, _taken(h), 73)),
        "Reclaim after the deadline",
        "/reclaim",
        _status("cancelled"),
        REFUNDED,
        _task(ending="refunded_undelivered"),
    ),
    "submit": Form(
        "ann",
        lambda h: _page(_taken(h)),
        "Submit a result",
        "/submissions",
        _status("submitted"),
        {},
        _task(status="submitted", attempts=1),
        fill=lambda b: b.page.get_by_label("Result").fill(GOOD),
    ),
    "finalize": Form(
        "ann",
        lambda h: _page(_delivered(h, "auto")),
        "Finalize: run the auto check",
        "/finalize",
        _status("completed"),
        PAID,
        _task(ending="paid_on_pass"),
    ),
    "review": Form(
        "pat",
        lambda h: _page(_delivered(h)),
        "Review: approve or reject",
        "/review",
        _status("completed"),
        PAID,
        _task(ending="paid_on_pass"),
    ),
    "dispute": Form(
        "pat",
        lambda h: _page(_delivered(h)),
        "Dispute",
        "/disputes",
        _status("disputed"),
        {},
        _one_dispute,
        fill=lambda b: b.page.get_by_label("Why").fill("It misses the point."),
    ),
    "ruling": Form(
        "root",
        lambda h: _page(_disputed(h)),
        "Rule as admin",
        "/ruling",
        _status("completed"),
        PAID,
        _task(ending="paid_by_ruling"),
        fill=lambda b: b.page.get_by_label("Note").fill("The result does what was asked."),
    ),
    "reveal": Form(
        "pat",
        lambda h: _page(_sealed(h)),
        "Reveal the sealed answer",
        "/reveal",
        _status("completed"),
        PAID,
        _task(ending="paid_on_pass"),
        fill=lambda b: b.page.get_by_label("Reveal to send").fill(
            json.dumps({"criteria": {"expected_answer": "Canberra"}, "salt": SALT})
        ),
    ),
    "collect": Form(
        "ann",
        lambda h: _page(_escalated(h)),
        "Collect (14 days after escalation)",
        "/collect",
        _status("completed"),
        PAID,
        _task(ending="paid_after_escalation"),
    ),
}


def _moved(before: dict[str, str], after: dict[str, str]) -> dict[str, int]:
    changed = {k: int(after.get(k, "0")) - int(before.get(k, "0")) for k in {*before, *after}}
    return {k: v for k, v in changed.items() if v and not k.startswith("escrow:")}


def _once(b: Browser, sent: Sent, path: str) -> None:
    """The page sent one request to ``path``, with a key, and shows no refusal."""
    b.page.wait_for_timeout(300)  # room for a second request to go out, were there one
    to_path = [(p, k) for p, k in sent.requests if p.endswith(path)]
    assert len(to_path) == 1, to_path
    assert to_path[0][1], "sent without an Idempotency-Key"
    assert b.page.get_by_role("alert").count() == 0, b.page.get_by_role("alert").all_inner_texts()


@pytest.mark.parametrize("gesture", GESTURES)
@pytest.mark.parametrize("action", sorted(TASK_FORMS))
def test_a_task_form_sent_twice_moves_money_once(
    browser: Browser, sent: Sent, action: str, gesture: str
) -> None:
    """Each task action's form sent twice at once: one request, one key, one movement."""
    b, h, form = browser, browser.h, TASK_FORMS[action]
    where, tid = form.ready(h)
    before = h.ledger()
    b.sign_in(form.who)
    b.open(where)
    form.fill(b)
    _press(b, form.button, gesture)
    form.done(b, tid)
    _once(b, sent, f"/tasks/{tid}{form.path}")
    assert _moved(before, h.ledger()) == form.moved
    form.after(h, tid)


@pytest.mark.parametrize("gesture", GESTURES)
def test_post_and_fund_sent_twice_posts_one_task(
    browser: Browser, sent: Sent, gesture: str
) -> None:
    """ "Post and fund" sent twice at once (Enter: in its title field): one task posted, its
    reward taken from the wallet once."""
    b, h, page = browser, browser.h, browser.page
    title = f"Posted by {gesture}"
    before = h.ledger()
    b.sign_in("pat")
    b.open("post")
    page.get_by_label("Title").fill(title)
    page.get_by_label("Reward (USDC)").fill("2")
    page.get_by_label("Mode").select_option("manual")
    _press(b, "Post and fund", gesture)
    page.wait_for_url("**/#/tasks/task_*")
    page.locator("h2", has_text=title).wait_for()
    _once(b, sent, "/api/v1/tasks")
    assert _moved(before, h.ledger()) == {"wallet:pat": -REWARD}
    _posted_once(h, title)


@pytest.mark.parametrize("gesture", GESTURES)
def test_webhook_forms_sent_twice_act_once(browser: Browser, sent: Sent, gesture: str) -> None:
    """Adding an endpoint and sending it a test event, each sent twice at once: one endpoint,
    one test event (each counts against the endpoint's allowance)."""
    b, h, page = browser, browser.h, browser.page
    b.sign_in("pat")
    b.open("webhooks")
    page.get_by_label("Endpoint URL").fill("https://example.com/hooks/adjudge")
    _press(b, "Add endpoint", gesture)
    page.get_by_label("Signing secret").wait_for()
    _once(b, sent, "/webhooks/endpoints")
    [endpoint] = h.ok("pat", "GET", "/webhooks/endpoints")["endpoints"]
    sent.requests.clear()
    _press(b, page.get_by_role("button", name="Send a test event"), gesture)
    page.locator(".notice", has_text="A test event is queued").wait_for()
    _once(b, sent, f"/webhooks/endpoints/{endpoint['id']}/test")
    assert len(h.ok("pat", "GET", "/webhooks/deliveries")["deliveries"]) == 1


@pytest.mark.parametrize("gesture", GESTURES)
def test_call_forms_sent_twice_act_once(world_browser: Browser, world: World, gesture: str) -> None:
    """Reporting a call and ruling on the report, each sent twice at once: one report, one
    refund of the charge."""
    b, h, page = world_browser, world.h, world_browser.page
    seen = Sent()
    page.on("request", seen.record)
    r = world.call({"city": "berlin"})
    assert r.status_code == 200, r.text
    call_id = r.json()["intentId"]
    b.sign_in("ann")
    b.open(f"calls/{call_id}")
    page.get_by_label("What is wrong with the result").fill("The highs are from last week.")
    _press(b, "Report a bad result", gesture)
    page.locator(".report .status", has_text="open").wait_for()
    _once(b, seen, f"/calls/{call_id}/report")
    assert len(h.ok("root", "GET", "/call-reports?status=open")["reports"]) == 1
    b.sign_in("root")
    seen.requests.clear()
    before = h.ledger()
    b.open(f"calls/{call_id}")
    page.get_by_label("Ruling on the report").select_option("upheld")
    page.get_by_label("Reasons for the ruling").fill("The forecast was a week old.")
    _press(b, "Rule on the report", gesture)
    page.locator(".report .status", has_text="upheld").wait_for()
    _once(b, seen, f"/calls/{call_id}/report/ruling")
    assert _moved(before, h.ledger()).get("wallet:ann") == PRICE


def test_a_refused_form_is_sent_again_under_its_key(browser: Browser, sent: Sent) -> None:
    """A refused post leaves its form usable: sent again as it was, it carries the same key;
    once its inputs change, a new one (the service refuses a key reused for other inputs)."""
    b, h, page = browser, browser.h, browser.page
    b.sign_in("pat")
    b.open("post")
    page.get_by_label("Title").fill("Too dear")
    page.get_by_label("Reward (USDC)").fill("1000")  # pat holds 100 USDC
    button = page.get_by_role("button", name="Post and fund")
    for _ in range(2):
        button.click()
        page.get_by_role("alert").filter(has_text="INSUFFICIENT_FUNDS").wait_for()
        assert button.is_enabled()
    page.get_by_label("Reward (USDC)").fill("2")
    button.click()
    page.wait_for_url("**/#/tasks/task_*")
    keys = [k for p, k in sent.requests if p == "/api/v1/tasks"]
    assert len(keys) == 3 and keys[0] == keys[1] != keys[2], keys
    _posted_once(h, "Too dear")


def test_a_task_posted_again_after_a_reload_is_posted_once(browser: Browser, sent: Sent) -> None:
    """ "Post and fund" whose answer never reaches the page (the service posted and funded the
    task; the connection dropped), then the page reloaded and the same task posted again: the
    second request carries the first's key, the service answers it from its record, and the
    reward left the wallet once (a reload made a new key: two tasks, two rewards taken). A
    success forgets the key: the same inputs posted again after it are a new task."""
    b, h, page = browser, browser.h, browser.page
    title = "Posted, answer lost"
    before = h.ledger()

    def lost(route: Any) -> None:
        if route.request.method == "POST":
            route.fetch()  # the service posts and funds it
            route.abort("connectionreset")  # and the page never hears
        else:
            route.continue_()

    def post() -> None:
        b.open("post")
        page.get_by_label("Title").fill(title)
        page.get_by_label("Reward (USDC)").fill("2")
        page.get_by_label("Mode").select_option("manual")
        page.get_by_role("button", name="Post and fund", exact=True).click()

    b.sign_in("pat")
    page.route("**/api/v1/tasks", lost)
    post()
    page.get_by_role("alert").wait_for()  # the page says the request failed
    page.unroute("**/api/v1/tasks")
    page.reload()
    b.sign_in("pat")
    post()
    page.wait_for_url("**/#/tasks/task_*")
    page.locator("h2", has_text=title).wait_for()
    posts = [k for p, k in sent.requests if p.endswith("/api/v1/tasks")]
    assert len(posts) == 2 and posts[0] == posts[1] and posts[0], posts
    assert _moved(before, h.ledger()) == {"wallet:pat": -REWARD}
    _posted_once(h, title)
    post()  # after a success: another task
    page.wait_for_url("**/#/tasks/task_*")
    page.wait_for_timeout(300)
    posts = [k for p, k in sent.requests if p.endswith("/api/v1/tasks")]
    assert len(posts) == 3 and posts[2] != posts[0], posts
    assert _moved(before, h.ledger()) == {"wallet:pat": -2 * REWARD}
