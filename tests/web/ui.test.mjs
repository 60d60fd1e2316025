// The web UI's pure helpers, in node (run by tests/web/test_ui.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  actionsFor,
  chainCommand,
  errorText,
  formatAmount,
  money,
  parseAmount,
  parseCriteria,
  percent,
  reasonLines,
  receiptFacts,
  shortTime,
  verifyCommand,
  words,
} from "../../src/adjudge/web/static/ui.js";

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
  assert.deepEqual(names(task({ status: "failed", agent: "ann", attempts: 3 }), ann), ["dispute"]);
  assert.deepEqual(names(task({ status: "failed", agent: "ann", attempts: 1 }), ann), ["submit", "dry-run", "dispute"]);
  assert.deepEqual(names(task({ status: "disputed" }), root), ["ruling"]);
  assert.deepEqual(names(task({ status: "completed", agent: "ann" }), ann), []);
  assert.deepEqual(actionsFor(null, ann), []);
  assert.deepEqual(actionsFor(task(), null), []);
});

test("reasons and criteria as typed", () => {
  assert.deepEqual(reasonLines("too short\n\n  no sources  \n"), ["too short", "no sources"]);
  assert.deepEqual(parseCriteria(""), { criteria: {} });
  assert.deepEqual(parseCriteria('{"min_length": 200}'), { criteria: { min_length: 200 } });
  assert.match(parseCriteria("{min_length: 200}").error, /^Criteria are not JSON/);
  assert.match(parseCriteria("[1]").error, /must be a JSON object/);
});

test("errors show the service's code and sentence", () => {
  assert.equal(
    errorText(409, { error: { code: "MAX_ATTEMPTS_REACHED", message: "No attempts left." } }),
    "MAX_ATTEMPTS_REACHED: No attempts left.",
  );
  assert.equal(errorText(502, null), "The service answered 502.");
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
