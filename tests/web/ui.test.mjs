// The web UI's pure helpers, in node (run by tests/web/test_ui.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  actionsFor,
  chartGeometry,
  csv,
  ratioValue,
  units,
  ledgerRow,
  LEDGER_CSV_HEADER,
  callActionsFor,
  chainCommand,
  replayCommands,
  shellWord,
  notFoundText,
  errorText,
  eventTypes,
  failureRate,
  formatAmount,
  hashOf,
  lintView,
  money,
  moneyState,
  onceKey,
  parseAmount,
  parseCriteria,
  parseHash,
  parseTakeWindow,
  price,
  percent,
  reasonLines,
  receiptFacts,
  shortTime,
  takeWindowText,
  verifyCommand,
  words,
  base64url,
  canonicalJson,
  commitmentOf,
  parseReveal,
  revealOf,
  sealText,
} from "../../src/adjudge/web/static/ui.js";
import { createHash } from "node:crypto";

test("amounts in minor units read as decimals", () => {
  assert.equal(formatAmount("2000000"), "2");
  assert.equal(formatAmount("500000"), "0.5");
  assert.equal(formatAmount("1"), "0.000001");
  assert.equal(formatAmount("0"), "0");
  assert.equal(formatAmount("123456789012345678901"), "123456789012345.678901"); // no float
  assert.equal(formatAmount("-1500000"), "-1.5");
  assert.equal(formatAmount("abc"), "abc");
  assert.equal(formatAmount("2000", 2), "20");
});

test("scores and times", () => {
  assert.equal(percent(0.835), "84%");
  assert.equal(percent(1), "100%");
  assert.equal(shortTime("2026-12-06T22:17:15.407892+00:00"), "2026-12-06 22:17 UTC");
  assert.equal(shortTime(null), "");
  assert.equal(shortTime("not a time"), "not a time");
});

const task = (over) => ({
  id: "t",
  status: "funded",
  mode: "auto",
  poster: "pat",
  agent: null,
  verifier: null,
  attempts: 0,
  max_attempts: 3,
  ...over,
});
const names = (t, me) => actionsFor(t, me).map(([a]) => a);
const pat = { id: "pat", roles: ["poster"] };
const ann = { id: "ann", roles: ["agent"] };
const vera = { id: "vera", roles: ["verifier"] };
const root = { id: "root", roles: ["admin"] };

test("actions follow the status, the mode and who is asking", () => {
  assert.deepEqual(names(task(), ann), ["accept"]);
  assert.deepEqual(names(task(), pat), ["cancel"]);
  assert.deepEqual(names(task({ status: "assigned", agent: "ann" }), ann), ["submit", "dry-run"]);
  assert.deepEqual(names(task({ status: "assigned", agent: "ann" }), pat), ["release", "reclaim"]);
  assert.deepEqual(names(task({ status: "submitted", agent: "ann" }), ann), ["finalize", "dispute"]);
  assert.deepEqual(names(task({ status: "submitted", mode: "manual", agent: "ann" }), pat), [
    "review",
    "dispute",
    "reclaim",
  ]);
  assert.deepEqual(names(task({ status: "awaiting_verification", verifier: "vera" }), vera), ["verdict-help"]);
  // An agent review that decided nothing went to the poster: the poster reviews it.
  assert.deepEqual(names(task({ status: "submitted", mode: "agent", routed: true, agent: "ann" }), pat), [
    "review",
    "dispute",
    "reclaim",
  ]);
  assert.deepEqual(names(task({ status: "submitted", mode: "agent", agent: "ann" }), pat), ["dispute", "reclaim"]);
  // A panel seat that has not voted posts a verdict; one that voted has nothing to do.
  const seats = (vote) => ({ quorum: 2, verifiers: [{ verifier: "vera", key: "k", vote }, { verifier: "vic", key: "k2", vote: null }] });
  assert.deepEqual(names(task({ status: "awaiting_verification", panel: seats(null) }), vera), ["verdict-help"]);
  assert.deepEqual(names(task({ status: "awaiting_verification", panel: seats("PASS") }), vera), []);
  // The parties may dispute while a verifier has not judged (before the deadline).
  assert.deepEqual(names(task({ status: "awaiting_verification", agent: "ann" }), ann), ["dispute"]);
  assert.deepEqual(names(task({ status: "awaiting_verification", agent: "ann" }), pat), ["dispute", "reclaim"]);
  assert.deepEqual(names(task({ status: "failed", agent: "ann", attempts: 3 }), ann), ["dispute"]);
  assert.deepEqual(names(task({ status: "failed", agent: "ann", attempts: 1 }), ann), ["submit", "dry-run", "dispute"]);
  assert.deepEqual(names(task({ status: "disputed" }), root), ["ruling"]);
  assert.deepEqual(names(task({ status: "completed", agent: "ann" }), ann), []);
  assert.deepEqual(actionsFor(null, ann), []);
  assert.deepEqual(actionsFor(task(), null), []);
});

test("an extra key is not offered what only the account's own key may do", () => {
  const extra = (me) => ({ ...me, extra_key: { id: "key_0123456789abcdef", label: "bot" } });
  const manual = task({ status: "submitted", mode: "manual", agent: "ann" });
  assert.deepEqual(names(manual, extra(pat)), ["dispute"]);
  assert.deepEqual(names(task({ status: "disputed" }), extra(root)), []);
  // What an extra key may do is still offered.
  assert.deepEqual(names(task({ status: "assigned", agent: "ann" }), extra(ann)), ["submit", "dry-run"]);
  const reported = { caller: "ann", provider: "sky", report: { status: "open" } };
  assert.deepEqual(callActionsFor(reported, root).map(([a]) => a), ["ruling"]);
  assert.deepEqual(callActionsFor(reported, extra(root)), []);
});

test("a timed action is offered only once its time has come, by the service's clock, and says when", () => {
  const at = "2026-12-06T10:00:00+00:00";
  const assigned = task({ status: "assigned", agent: "ann", deadline: "2026-12-08T10:00:00+00:00", accepted_at: at, as_of: at });
  const later = actionsFor(assigned, pat);
  assert.deepEqual(later.map(([a]) => a), ["later", "later"]);
  assert.match(later[0][1], /release the agent from 2026-12-07 10:00 UTC/);
  assert.match(later[1][1], /reclaim the reward from 2026-12-08 10:00 UTC, after the deadline/);
  assert.deepEqual(names({ ...assigned, as_of: "2026-12-08T10:00:01+00:00" }, pat), ["release", "reclaim"]);
  // A failed verdict: the later of the deadline and the agent's 3-day appeal window.
  const failed = task({ status: "failed", agent: "ann", attempts: 1, deadline: at, failed_at: "2026-12-06T09:00:00+00:00", as_of: "2026-12-07T00:00:00+00:00" });
  assert.match(actionsFor(failed, pat).at(-1)[1], /from 2026-12-09 09:00 UTC/);
  const escalated = task({ status: "escalated", agent: "ann", escalated_at: at, as_of: at });
  assert.match(actionsFor(escalated, ann)[0][1], /collect the reward from 2026-12-20 10:00 UTC/);
  assert.deepEqual(names({ ...escalated, as_of: "2026-12-21T00:00:00+00:00" }, ann), ["collect"]);
});

test("reasons and criteria as typed", () => {
  assert.deepEqual(reasonLines("too short\n\n  no sources  \n"), ["too short", "no sources"]);
  assert.deepEqual(parseCriteria(""), { criteria: {} });
  assert.deepEqual(parseCriteria('{"min_length": 200}'), { criteria: { min_length: 200 } });
  assert.match(parseCriteria("{min_length: 200}").error, /^Criteria are not JSON/);
  assert.match(parseCriteria("[1]").error, /must be a JSON object/);
});

test("a take window as typed, and as a task shows it", () => {
  assert.deepEqual(parseTakeWindow(""), { hours: null });
  assert.deepEqual(parseTakeWindow(" 12 "), { hours: 12 });
  assert.deepEqual(parseTakeWindow("2160"), { hours: 2160 });
  for (const bad of ["0", "2161", "1.5", "-3", "six", "1e2"]) {
    assert.match(parseTakeWindow(bad).error, /whole hours from 1 to 2160/, bad);
  }
  assert.equal(takeWindowText({ take_window_hours: null }), null);
  assert.equal(
    takeWindowText({ take_window_hours: 1, take_lapses_at: null }),
    "1 hour to submit after taking, or the take lapses and the task opens again",
  );
  assert.match(
    takeWindowText({ take_window_hours: 6, take_lapses_at: "2026-12-06T22:17:09+00:00" }),
    /^6 hours .*; the current take lapses at 2026-12-06 22:17 UTC$/,
  );
});

test("errors show the service's code and sentence", () => {
  assert.equal(
    errorText(409, { error: { code: "MAX_ATTEMPTS_REACHED", message: "No attempts left." } }),
    "MAX_ATTEMPTS_REACHED: No attempts left.",
  );
  assert.equal(
    errorText(409, { error: { code: "REPORT_EXISTS", message: "Reported.", request_id: "req_1" } }),
    "REPORT_EXISTS: Reported. (request req_1)",
  );
  assert.equal(errorText(502, null), "The service answered 502.");
});

test("gateway amounts read in their own currency's decimals", () => {
  assert.equal(price({ amount: "25", asset: "USD", decimals: 2 }), "0.25 USD");
  assert.equal(price({ amount: "1500000", asset: "USDC", decimals: 6 }), "1.5 USDC");
  assert.equal(price({ amount: "300", asset: "JPY", decimals: 0 }), "300 JPY");
  assert.equal(price({ amount: "0", asset: "USD", decimals: 2 }), "0 USD");
  assert.equal(price(null), "");
});

test("a paid call's money reads as it stands", () => {
  const usdc = (amount) => ({ amount, asset: "USDC", decimals: 6 });
  const base = { charged: usdc("250000"), refunded: usdc("0"), held_until: null, paid_at: null };
  assert.equal(moneyState({ ...base, state: "held", held_until: "2026-01-04T12:00:00+00:00" }).startsWith("0.25 USDC, held until "), true);
  assert.equal(moneyState({ ...base, state: "paid" }), "0.25 USDC, paid to the provider");
  assert.equal(moneyState({ ...base, state: "reported" }), "0.25 USDC, held while its report is ruled on");
  assert.equal(
    moneyState({ ...base, state: "refunded_after_report", charged: usdc("0"), refunded: usdc("250000") }),
    "0.25 USDC refunded after a report",
  );
  assert.equal(moneyState({ ...base, state: "refunded", charged: usdc("0") }), "nothing charged");
  assert.equal(moneyState(null), "");
});

test("a hash names a page and its filters, and back", () => {
  assert.deepEqual(parseHash("#/calls/abc?verdict=FAIL&tool="), { parts: ["calls", "abc"], query: { verdict: "FAIL" } });
  assert.deepEqual(parseHash("#/providers/sky%20cast/quality"), { parts: ["providers", "sky cast", "quality"], query: {} });
  assert.deepEqual(parseHash(""), { parts: [], query: {} });
  assert.deepEqual(parseHash("#/tools/%E0%A4%A"), { parts: ["tools", "%E0%A4%A"], query: {} });
  assert.equal(hashOf(["calls"], { tool: "weather forecast", verdict: "", provider: null }), "#/calls?tool=weather+forecast");
  assert.equal(hashOf(["providers", "a/b", "quality"]), "#/providers/a%2Fb/quality");
  const back = parseHash(hashOf(["calls"], { tool: "a&b=c", verdict: "PASS" }));
  assert.deepEqual(back, { parts: ["calls"], query: { tool: "a&b=c", verdict: "PASS" } });
});

test("a failure rate is exact, and no observations is not zero", () => {
  assert.equal(failureRate("1/3"), "1/3 (33.3%)");
  assert.equal(failureRate("1/1"), "1/1 (100%)");
  assert.equal(failureRate("0"), "0%");
  assert.equal(failureRate(null), "no observations");
  assert.equal(failureRate("odd"), "odd");
});

test("a call offers its caller a report and an outside admin a ruling", () => {
  const call = (over) => ({ caller: "ann", provider: "sky", report_deadline: "2026-01-04T12:00:00+00:00", report: null, ...over });
  const acts = (c, me) => callActionsFor(c, me).map(([a]) => a);
  assert.deepEqual(acts(call(), ann), ["report"]);
  assert.deepEqual(acts(call({ report_deadline: null }), ann), []); // refunded: nothing to report
  assert.deepEqual(acts(call(), pat), []);
  assert.deepEqual(acts(call({ report: { status: "open" } }), ann), []);
  assert.deepEqual(acts(call({ report: { status: "open" } }), root), ["ruling"]);
  assert.deepEqual(acts(call({ report: { status: "upheld" } }), root), []);
  assert.deepEqual(acts(call({ caller: "root", report: { status: "open" } }), root), []); // its own call
  assert.deepEqual(callActionsFor(null, ann), []);
});

test("event types are typed as a list; none is all", () => {
  assert.deepEqual(eventTypes("call.settled, webhook.test call.settled"), ["call.settled", "webhook.test"]);
  assert.equal(eventTypes("  "), null);
});

test("amounts are typed and shown in USDC, converted exactly", () => {
  assert.deepEqual(parseAmount("1.5"), { minor: "1500000" });
  assert.deepEqual(parseAmount("2"), { minor: "2000000" });
  assert.deepEqual(parseAmount(" 0.000001 "), { minor: "1" });
  assert.deepEqual(parseAmount(".5"), { minor: "500000" });
  assert.deepEqual(parseAmount("123456789012.123456"), { minor: "123456789012123456" }); // no float
  assert.match(parseAmount("1.0000001").error, /6 decimals/);
  assert.match(parseAmount("-1").error, /Enter an amount/);
  assert.match(parseAmount("").error, /Enter an amount/);
  assert.match(parseAmount("1e6").error, /Enter an amount/);
  assert.match(parseAmount("0.0").error, /more than zero/);
  assert.match(parseAmount(".").error, /Enter an amount/);
  for (const typed of ["1.5", "0.25", "1000", "0.000001"]) {
    assert.equal(formatAmount(parseAmount(typed).minor), typed.replace(/^0+(?=\d)/, ""));
  }
  assert.equal(money("1500000"), "1.5 USDC");
});

test("statuses read as words", () => {
  assert.equal(words("awaiting_verification"), "awaiting verification");
  assert.equal(words("paid_on_pass"), "paid on pass");
  assert.equal(words(null), "");
});

test("the verify commands name the file, the key and the head", () => {
  assert.equal(verifyCommand("r.json", "ab"), "adjudge receipt verify r.json --key ab");
  assert.equal(verifyCommand("r.json", null), "adjudge receipt verify r.json --key FINGERPRINT");
  assert.equal(chainCommand("log.jsonl", "ab", "sha256:c"), "adjudge receipt verify-chain log.jsonl --key ab --head sha256:c");
});

test("the replay commands name the round or the call, and the key", () => {
  const auto = [{ name: "evidence-integrity" }, { name: "auto-check" }];
  assert.deepEqual(replayCommands("task:t_1/round:2", auto, "ab"), [
    "adjudge receipt bundle --task t_1 --attempt 2 --out verdict.zip",
    "adjudge replay verdict.zip --key ab",
  ]);
  assert.deepEqual(replayCommands("call:c-9", [], null), [
    "adjudge receipt bundle --call c-9 --out verdict.zip",
    "adjudge replay verdict.zip --key FINGERPRINT",
  ]);
  assert.equal(replayCommands("task:t_1/round:1", [{ name: "manual-review" }], "ab"), null);
  assert.equal(replayCommands(null, auto, "ab"), null);
});

test("a page whose address names no such id says so in its own words, the id left out", () => {
  const body = { error: { code: "TASK_NOT_FOUND", message: "No task x. Paste your key at evil.example.", request_id: "r1" } };
  const said = notFoundText(body);
  assert.equal(said, "TASK_NOT_FOUND: nothing here has the id this page's address names; check the link. (request r1)");
  assert.ok(!said.includes("evil"));
  assert.equal(notFoundText(null), "NOT_FOUND: nothing here has the id this page's address names; check the link.");
});

test("an id someone else chose is one quoted word of a command, never a command of its own", () => {
  assert.equal(shellWord("c-9"), "c-9");
  assert.equal(shellWord("sha256:ab/c.json"), "sha256:ab/c.json");
  assert.equal(shellWord("wx-1; touch /tmp/owned"), "'wx-1; touch /tmp/owned'");
  assert.equal(shellWord("it's $(id)"), "'it'\\''s $(id)'");
  assert.equal(shellWord(""), "''");
  assert.equal(shellWord("=ls"), "'=ls'");
  assert.deepEqual(replayCommands("call:a`id`|sh", [], "ab"), [
    "adjudge receipt bundle --call 'a`id`|sh' --out verdict.zip",
    "adjudge replay verdict.zip --key ab",
  ]);
  assert.equal(verifyCommand("r $x.json", "ab"), "adjudge receipt verify 'r $x.json' --key ab");
});

test("a receipt's facts: who decided under which trust, each check now, the chain", () => {
  const record = {
    statement: {
      subject: [{ name: "result", digest: { sha256: "aa" } }],
      predicate: {
        verdict: "PENDING",
        decidedAt: "2026-01-01T00:00:00Z",
        sequence: 4,
        previous: "sha256:p",
        signer: { keyid: "k1" },
        trustPolicy: { authorities: ["deterministic"], verifierKeys: ["v1"] },
        policyDecision: { ending: "paid_on_pass" },
        checks: [
          { name: "evidence-integrity", authority: "deterministic", verdict: "PASS", evidence: ["sha256:aa"] },
          { name: "agent-review", authority: "semantic", verdict: "PENDING", verifierKey: "v1", pending: { deadline: "2026-01-02T00:00:00Z", expiresTo: "UNKNOWN" } },
        ],
      },
    },
    as_of: {
      at: "2026-02-01T00:00:00Z",
      verdict: "UNKNOWN",
      checks: [
        { name: "evidence-integrity", recorded: "PASS", now: "PASS", counts_as: "PASS" },
        { name: "agent-review", recorded: "PENDING", now: "UNKNOWN", counts_as: "UNKNOWN" },
      ],
    },
  };
  const facts = receiptFacts(record);
  assert.equal(facts.verdict, "PENDING");
  assert.equal(facts.verdictNow, "UNKNOWN");
  assert.equal(facts.subject, "sha256:aa");
  assert.deepEqual(facts.decidedBy, ["agent-review (semantic, key v1)"]);
  assert.deepEqual(facts.trusted, ["deterministic", "verifier key v1"]);
  assert.equal(facts.checks[1].now, "UNKNOWN");
  assert.equal(facts.checks[1].pending.expiresTo, "UNKNOWN");
  assert.equal(facts.sequence, 4);
  assert.equal(facts.keyid, "k1");
  assert.equal(receiptFacts({ statement: null }), null);
});

test("a form keeps one Idempotency-Key per submission", () => {
  let made = 0;
  const keys = onceKey(() => `k${++made}`);
  const body = { title: "T", reward: "2000000" };
  assert.equal(keys.for(body), "k1");
  assert.equal(keys.for({ title: "T", reward: "2000000" }), "k1"); // a retry of the same inputs
  assert.equal(keys.for({ title: "T", reward: "3000000" }), "k2"); // changed inputs: a new key
  assert.equal(keys.for(body), "k3"); // changed back: still a new submission
  keys.done(); // a success: the next send is another submission
  assert.equal(keys.for(body), "k4");
  assert.equal(keys.for(undefined), "k5");
  assert.equal(keys.for(null), "k5"); // no inputs are the same inputs
  assert.equal(made, 5);
});

test("a form's key kept in the session outlives a reload until a success", () => {
  const session = new Map();
  const store = {
    getItem: (k) => (session.has(k) ? session.get(k) : null),
    setItem: (k, v) => session.set(k, String(v)),
    removeItem: (k) => session.delete(k),
  };
  let made = 0;
  const fresh = () => `k${++made}`;
  const body = { title: "T", reward: "2000000" };
  assert.equal(onceKey(fresh, store, "post").for(body), "k1"); // sent; its answer lost
  const reloaded = onceKey(fresh, store, "post"); // the page loaded again
  assert.equal(reloaded.for(body), "k1"); // the same inputs: the same request
  assert.equal(onceKey(fresh, store, "other").for(body), "k2"); // another form's own
  reloaded.done(); // a success: forgotten
  assert.equal(onceKey(fresh, store, "post").for(body), "k3");
  assert.equal(onceKey(fresh, store, "post").for({ title: "U" }), "k4"); // other inputs
  session.set("adjudge.once.post", "not json");
  assert.equal(onceKey(fresh, store, "post").for(body), "k5");
  const refusing = { getItem: () => { throw new Error("denied"); }, setItem: () => { throw new Error("full"); }, removeItem: () => {} };
  const keys = onceKey(fresh, refusing, "post");
  assert.equal(keys.for(body), "k6");
  assert.equal(keys.for(body), "k6"); // kept for the page all the same
});

test("the criteria lint as the post form shows it", () => {
  const answer = {
    findings: [
      { code: "KEYWORDS_ECHO_PASSES", field: "contains_keywords", message: "A result…", posting_refuses: false },
      { code: "CRITERIA_UNKNOWN_FIELD", field: "min_lenght", message: "Did you mean…", posting_refuses: true },
    ],
    margin: { result: "escrow refund deadline", score: 100, length: 22, how: "the keywords" },
    summary: "A 22-character result (the keywords) passes with score 100: …",
  };
  const view = lintView(answer);
  assert.equal(view.heading, "2 findings");
  assert.deepEqual(view.findings.map((f) => [f.code, f.refused]), [["KEYWORDS_ECHO_PASSES", false], ["CRITERIA_UNKNOWN_FIELD", true]]);
  assert.equal(view.margin, "escrow refund deadline");
  assert.equal(view.note, null);
  const clean = lintView({ findings: [{ code: "X", field: "f", message: "m", posting_refuses: false }], margin: null, summary: "No cheap result passes: …" }, "manual");
  assert.equal(clean.heading, "1 finding");
  assert.equal(clean.margin, null);
  assert.match(clean.note, /manual mode/);
  assert.equal(lintView({ findings: [], margin: null, summary: "" }).heading, "No findings");
});

test("a sealed answer's commitment is the sha256 of the reveal's RFC 8785 JSON", () => {
  const reveal = revealOf("Canberra", "s\u00e9l-\u2028");
  const text = canonicalJson(reveal);
  // Members sorted, no blanks, strings as JSON.stringify writes them (RFC 8785's own rule).
  assert.equal(text, '{"criteria":{"expected_answer":"Canberra"},"salt":"s\u00e9l-\u2028"}');
  assert.equal(canonicalJson({ b: [1, "x", null, true], a: { d: 1, c: 2 } }), '{"a":{"c":2,"d":1},"b":[1,"x",null,true]}');
  const digest = createHash("sha256").update(Buffer.from(text, "utf8")).digest();
  // The commitment adjudge.market.seal.commit gives for this reveal, pinned here.
  assert.equal(commitmentOf(digest), "sha256:53533c8fa054d41bbcb977507b7360135ebba4275fca0694447d35f0b5007a00");
  assert.equal(base64url(new Uint8Array([251, 255, 0])), "-_8A");
});

test("a pasted reveal is checked for its shape only", () => {
  assert.deepEqual(parseReveal('{"criteria": {"expected_answer": "42"}, "salt": "x"}'), {
    reveal: { criteria: { expected_answer: "42" }, salt: "x" },
  });
  for (const bad of ["", "42", '{"criteria": "42", "salt": "x"}', '{"criteria": {}}', "[1]"]) {
    assert.ok(parseReveal(bad).error, bad);
  }
  assert.equal(sealText({ seal: null }), null);
  assert.match(sealText({ seal: { revealed: false, reveal_due_at: "2026-12-06T22:17:09+00:00" } }), /reveal by 2026-12-06 22:17 UTC/);
  assert.match(sealText({ seal: { broken: "the reveal's digest …", revealed: false } }), /^broken: .*escalated$/);
});

test("only the poster is offered the reveal, while a submission waits and it is sealed", () => {
  const base = { poster: "pat", agent: "ann", mode: "auto", attempts: 1, max_attempts: 3 };
  const sealed = { ...base, seal: { revealed: false } };
  const pat = { id: "pat", roles: ["poster"] };
  const ann = { id: "ann", roles: ["agent"] };
  for (const status of ["submitted", "awaiting_verification"]) {
    assert.ok(actionsFor({ ...sealed, status }, pat).some(([a]) => a === "reveal"), status);
    assert.ok(!actionsFor({ ...sealed, status }, ann).some(([a]) => a === "reveal"), status);
    assert.ok(!actionsFor({ ...base, status }, pat).some(([a]) => a === "reveal"), status);
  }
  assert.ok(!actionsFor({ ...sealed, status: "submitted", seal: { revealed: true } }, pat).some(([a]) => a === "reveal"));
  assert.ok(!actionsFor({ ...sealed, status: "assigned" }, pat).some(([a]) => a === "reveal"));
});

test("CSV quotes what needs quoting and defuses formulas", () => {
  assert.equal(csv([["a", "b,c"], ['say "hi"', "x\ny"]]), 'a,"b,c"\r\n"say ""hi""","x\ny"\r\n');
  assert.equal(csv([["=SUM(A1)", "-1.5", "-2000000", "@x", null]]), "'=SUM(A1),-1.5,-2000000,'@x,\r\n");
  const row = ledgerRow({ at: "t", account: "wallet:pat", counterpart: "escrow:t1", kind: "fund", amount: "-1500000", task_id: "t1", receipt_id: null, txn: "x" });
  assert.deepEqual(row, ["t", "wallet:pat", "escrow:t1", "fund", "-1.5", "-1500000", "t1", "", "x"]);
  assert.equal(LEDGER_CSV_HEADER.length, row.length);
});

test("a chart's bars stack per day on one scale, and its lines and references share it", () => {
  const g = chartGeometry({
    labels: ["2026-12-01", "2026-12-02"],
    series: [
      { name: "PASS", values: [3, 1] },
      { name: "FAIL", values: [1, 0] },
      { name: "rate", values: [0.5, null], kind: "line" },
    ],
    refs: [{ name: "declared", value: 2 }],
    width: 100,
    height: 50,
  });
  // The top of the scale is the tallest stack (3 + 1); a zero makes no bar.
  assert.equal(g.yTicks.at(-1).label, "4");
  assert.equal(g.bars.length, 3);
  const [pass, fail] = g.bars;
  assert.ok(Math.abs(fail.y + fail.h - pass.y) < 1e-9, "FAIL sits on PASS");
  assert.ok(Math.abs(pass.h - 3 * fail.h) < 1e-9, "3 is three times as tall as 1");
  assert.equal(fail.y, 8); // the top of the plot
  assert.equal(g.lines[0].points.split(" ").length, 1); // a null is no point
  assert.ok(Math.abs(g.refs[0].y - (8 + 20 * 0.5)) < 1e-9); // 2 of 4: halfway up the 20-high plot
  assert.deepEqual(g.xTicks.map((t) => t.label), ["12-01", "12-02"]);
  assert.equal(chartGeometry({ labels: ["d"], series: [{ name: "x", values: [0] }] }).yTicks.at(-1).label, "1");
  assert.equal(units("1500000"), 1.5);
  assert.equal(ratioValue("1/4"), 0.25);
  assert.equal(ratioValue(null), null);
});
