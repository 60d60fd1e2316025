// The web UI's pure helpers, in node (run by tests/web/test_ui.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  actionsFor,
  errorText,
  formatAmount,
  parseCriteria,
  percent,
  reasonLines,
  shortTime,
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
