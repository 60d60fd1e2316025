// The web UI's pure helpers: no DOM, no network. tests/web/ui.test.mjs runs them in node.

/** Minor units ("2000000") as a decimal amount ("2") with `decimals` places (USDC has 6). */
export function formatAmount(minor, decimals = 6) {
  const digits = String(minor ?? "");
  if (!/^-?\d+$/.test(digits)) return digits;
  const negative = digits.startsWith("-");
  const padded = (negative ? digits.slice(1) : digits).padStart(decimals + 1, "0");
  const whole = padded.slice(0, padded.length - decimals).replace(/^0+(?=\d)/, "");
  const fraction = padded.slice(padded.length - decimals).replace(/0+$/, "");
  return (negative ? "-" : "") + whole + (fraction ? "." + fraction : "");
}

/** The currency amounts are in, with its decimals (2000000 minor units are 2 USDC). */
export const CURRENCY = { code: "USDC", decimals: 6 };

/** Minor units as people read them: "1.5 USDC". */
export function money(minor, currency = CURRENCY) {
  return `${formatAmount(minor, currency.decimals)} ${currency.code}`;
}

/**
 * An amount typed in the currency's unit ("1.5", "2", "0.000001") as minor units ("1500000"),
 * exactly (no floating point), or an error sentence: more decimals than the currency has, a
 * sign, a blank, letters or zero are refused.
 */
export function parseAmount(text, currency = CURRENCY) {
  const source = String(text ?? "").trim().replace(/_/g, "");
  const match = /^(\d*)(?:\.(\d*))?$/.exec(source);
  if (!source || !match || (match[1] === "" && !match[2])) {
    return { error: `Enter an amount in ${currency.code}, such as 2 or 1.5.` };
  }
  const fraction = match[2] || "";
  if (fraction.length > currency.decimals) {
    return { error: `${currency.code} has ${currency.decimals} decimals; ${source} has more.` };
  }
  const digits = ((match[1] || "0") + fraction.padEnd(currency.decimals, "0")).replace(/^0+(?=\d)/, "");
  if (/^0+$/.test(digits)) return { error: "The amount must be more than zero." };
  return { minor: digits };
}

/** A status or ending as words: "awaiting_verification" -> "awaiting verification". */
export function words(name) {
  return String(name ?? "").replace(/_/g, " ");
}

/** A 0..1 item score as the breakdown shows it: "84%". */
export function percent(score) {
  return `${Math.round(Number(score) * 100)}%`;
}

/** An ISO time, shorter: "2026-12-06 22:17 UTC" (UTC, to the minute). */
export function shortTime(iso) {
  if (!iso) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return String(iso);
  return t.toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

const HOUR = 3600 * 1000;

/** When `iso` plus `hours` is still ahead of `now` (ms), that moment as a Date; else null
 * (passed, or no time known: the service decides). */
function ahead(iso, hours, now) {
  if (!iso) return null;
  const at = new Date(Date.parse(iso) + hours * HOUR);
  return Number.isNaN(at.getTime()) || at.getTime() <= now ? null : at;
}

/** Whether `me` holds a seat on the task's panel and has not voted on this submission. */
function seated(task, me) {
  return (task.panel?.verifiers || []).some((seat) => seat.verifier === me.id && !seat.vote);
}

/**
 * The actions worth offering `me` on `task`: the service decides for real (and answers with a
 * code when it refuses); this only hides buttons that cannot apply. Each is [action, label].
 * An action that waits on a time still ahead of `now` (the service's clock: the task's
 * `as_of`, else this browser's) is not offered: it comes as ["later", "what, from when"].
 */
export function actionsFor(task, me, now = Date.parse(task?.as_of ?? "") || Date.now()) {
  if (!task || !me) return [];
  const roles = new Set(me.roles || []);
  const isPoster = task.poster === me.id;
  const isAgent = task.agent === me.id;
  const open = task.attempts < task.max_attempts;
  const out = [];
  const add = (action, label) => out.push([action, label]);
  // A timed action: offered once every [iso, hours] wait has passed, else said (`later` names
  // the moment as {from}).
  const timed = (action, label, later, waits) => {
    const until = waits.map(([iso, hours]) => ahead(iso, hours, now)).filter(Boolean);
    if (!until.length) add(action, label);
    else {
      const from = new Date(Math.max(...until.map((d) => d.getTime())));
      add("later", later.replace("{from}", shortTime(from.toISOString())));
    }
  };
  const reclaim = (waits = [[task.deadline, 0]]) =>
    timed("reclaim", "Reclaim after the deadline", "You can reclaim the reward from {from}, after the deadline.", waits);
  switch (task.status) {
    case "funded":
      if (roles.has("agent") && !isPoster) add("accept", "Take this task");
      if (isPoster) add("cancel", "Cancel and refund");
      break;
    case "assigned":
      if (isAgent) {
        add("submit", "Submit a result");
        add("dry-run", "Dry run a draft");
      }
      if (isPoster && task.attempts === 0) {
        timed("release", "Release the agent (24 h after it took the task)", "You can release the agent from {from}, 24 h after it took the task.", [[task.accepted_at, 24]]);
      }
      if (isPoster) reclaim();
      break;
    case "submitted":
      if (isAgent && task.mode === "auto") add("finalize", "Finalize: run the auto check");
      if (isPoster && task.seal && !task.seal.revealed) add("reveal", "Reveal the sealed answer");
      // A manual task's, or an agent review's that decided nothing and went to the poster.
      if (isPoster && (task.mode === "manual" || task.routed)) add("review", "Review: approve or reject");
      if (isPoster || isAgent) add("dispute", "Dispute");
      if (isPoster) reclaim();
      break;
    case "awaiting_verification":
      // A verifier's verdict is signed with the verifier's private key, which stays out of the
      // browser: the page shows the command that signs and posts it.
      if (task.verifier === me.id || seated(task, me)) add("verdict-help", "Post a verifier verdict");
      if (isPoster && task.seal && !task.seal.revealed) add("reveal", "Reveal the sealed answer");
      if (isPoster || isAgent) add("dispute", "Dispute");
      if (isPoster) reclaim();
      break;
    case "failed":
      if (isAgent && open) {
        add("submit", "Submit again");
        add("dry-run", "Dry run a draft");
      }
      if (isPoster || isAgent) add("dispute", "Dispute");
      // After a failed verdict the agent has 3 days to appeal before the reward goes back.
      if (isPoster) reclaim([[task.deadline, 0], [task.failed_at, 72]]);
      break;
    case "escalated":
      if (isAgent) timed("collect", "Collect (14 days after escalation)", "You can collect the reward from {from}, 14 days after escalation.", [[task.escalated_at, 14 * 24]]);
      break;
    default:
      break;
  }
  if ((task.status === "disputed" || task.status === "escalated") && roles.has("admin")) {
    add("ruling", "Rule as admin");
  }
  // An extra key's budget is for calls: the service refuses it what sends money on the
  // account's word (PRIMARY_KEY_REQUIRED), so it is not offered.
  return me.extra_key ? out.filter(([a]) => !PRIMARY_ONLY.has(a)) : out;
}

/** What only an account's own key may do (an extra key is refused it). */
const PRIMARY_ONLY = new Set(["review", "ruling", "reveal", "reclaim"]);

/** Reasons typed one per line, as the API takes them (blank lines dropped). */
export function reasonLines(text) {
  return String(text ?? "")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
}

/** Parse the criteria textarea: an object, or an error sentence a person can act on. */
export function parseCriteria(text) {
  const source = String(text ?? "").trim();
  if (!source) return { criteria: {} };
  let value;
  try {
    value = JSON.parse(source);
  } catch (err) {
    return { error: `Criteria are not JSON: ${err.message}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "Criteria must be a JSON object, such as {\"min_length\": 200}." };
  }
  return { criteria: value };
}

/**
 * The criteria lint's answer (POST /criteria/lint) as the post form shows it: a heading, each
 * finding as `{code, field, message, refused}`, the margin's sentence and its result (null when
 * no cheap result passes), and a note when the task's mode is not auto (the auto check then
 * does not judge it, so the findings are what it would find).
 */
export function lintView(answer, mode = "auto") {
  const findings = (answer && answer.findings) || [];
  const n = findings.length;
  return {
    heading: n === 0 ? "No findings" : `${n} finding${n === 1 ? "" : "s"}`,
    findings: findings.map((f) => ({
      code: String(f.code),
      field: String(f.field),
      message: String(f.message),
      refused: Boolean(f.posting_refuses),
    })),
    summary: String((answer && answer.summary) || ""),
    margin: answer && answer.margin ? String(answer.margin.result) : null,
    note:
      mode === "auto"
        ? null
        : `In ${mode} mode the auto check does not decide; this is what it would find.`,
  };
}

/**
 * The take window as typed: blank is none (a take lasts until the deadline), else whole hours
 * from 1 to 2160, or an error sentence a person can act on. The service also checks that the
 * window ends before the deadline.
 */
export function parseTakeWindow(text) {
  const source = String(text ?? "").trim();
  if (!source) return { hours: null };
  if (!/^\d+$/.test(source) || Number(source) < 1 || Number(source) > 2160) {
    return { error: "A take window is whole hours from 1 to 2160, or blank for none." };
  }
  return { hours: Number(source) };
}

/** What a task says about its take window: how long an agent has to submit, and when the
 * current take lapses (null without a window). */
export function takeWindowText(task) {
  if (!task || !task.take_window_hours) return null;
  const hours = task.take_window_hours === 1 ? "1 hour" : `${task.take_window_hours} hours`;
  const base = `${hours} to submit after taking, or the take lapses and the task opens again`;
  return task.take_lapses_at ? `${base}; the current take lapses at ${shortTime(task.take_lapses_at)}` : base;
}

/** The message to show for a failed request: the service's error code and sentence, and the
 * request id the service logged it under (what an operator asks for). */
export function errorText(status, body) {
  const err = body && typeof body === "object" ? body.error : null;
  if (err && err.code) return `${err.code}: ${err.message}` + (err.request_id ? ` (request ${err.request_id})` : "");
  return `The service answered ${status}.`;
}

/** `text` as one word of a shell command: as it is when it holds only characters no shell
 * reads specially (not =: zsh reads a word starting with it as a command's path), else in
 * single quotes (each ' written '\''). A command the page offers to copy names ids that other
 * people chose (a reported call's id is its submitter's): pasted into a terminal, each stays
 * one argument and never runs as a command of its own. */
export function shellWord(text) {
  const s = String(text ?? "");
  return /^[A-Za-z0-9_@%+:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/** The message for a page whose address names nothing the service has (a 404 answering the
 * page's own read): the service's code and the request id, in the page's words. The service's
 * sentence repeats the id, and the id is whatever the link's sender wrote ("#/tasks/Your key
 * has expired: paste it at …"): shown, it read as the service's own word. */
export function notFoundText(body) {
  const err = body && typeof body === "object" ? body.error : null;
  const code = err && err.code ? err.code : "NOT_FOUND";
  return `${code}: nothing here has the id this page's address names; check the link.` + (err && err.request_id ? ` (request ${err.request_id})` : "");
}

/** The command that checks a saved envelope offline against the fingerprint to pin. */
export function verifyCommand(file, fingerprint) {
  return `adjudge receipt verify ${shellWord(file)} --key ${shellWord(fingerprint || "FINGERPRINT")}`;
}

/** The command that checks an exported log against a pinned key and head. */
export function chainCommand(file, fingerprint, head) {
  const tail = head ? ` --head ${shellWord(head)}` : "";
  return `adjudge receipt verify-chain ${shellWord(file)} --key ${shellWord(fingerprint || "FINGERPRINT")}${tail}`;
}

/** The commands that fetch a receipt's replay bundle and re-run it offline (docs/replay.md),
 * from what the receipt is about: an auto check's round of a task, or a paid call. null for a
 * receipt no replay re-runs (a person's or a verifier's judgment, a settlement). */
export function replayCommands(about, checks, fingerprint) {
  const key = shellWord(fingerprint || "FINGERPRINT");
  const round = /^task:(.+)\/round:(\d+)$/.exec(about || "");
  const call = /^call:(.+)$/.exec(about || "");
  let subject = null;
  if (round && (checks || []).some((c) => c.name === "auto-check")) subject = `--task ${shellWord(round[1])} --attempt ${round[2]}`;
  else if (call) subject = `--call ${shellWord(call[1])}`;
  if (!subject) return null;
  return [`adjudge receipt bundle ${subject} --out verdict.zip`, `adjudge replay verdict.zip --key ${key}`];
}

/** What a receipt's decoded statement says, for the page: the subject digest, when and by
 * whom it was decided, under which trust, and each check with its reading now. */
export function receiptFacts(record) {
  const statement = record && record.statement;
  const p = statement && statement.predicate;
  if (!p) return null;
  const subject = (statement.subject || [])[0] || {};
  const trust = p.trustPolicy || {};
  const now = (record.as_of && record.as_of.checks) || [];
  const checks = (p.checks || []).map((c, i) => ({
    name: c.name,
    authority: c.authority,
    verdict: c.verdict,
    now: now[i] ? now[i].now : c.verdict,
    countsAs: now[i] ? now[i].counts_as : c.verdict,
    reason: c.reason || "",
    evidence: c.evidence || [],
    verifierKey: c.verifierKey || null,
    pending: c.pending || null,
  }));
  const judges = checks.filter((c) => c.name !== "evidence-integrity");
  return {
    verdict: p.verdict,
    verdictNow: record.as_of ? record.as_of.verdict : p.verdict,
    asOf: record.as_of ? record.as_of.at : null,
    decidedAt: p.decidedAt,
    decidedBy: judges.map((c) => (c.verifierKey ? `${c.name} (${c.authority}, key ${c.verifierKey})` : `${c.name} (${c.authority})`)),
    trusted: [...(trust.authorities || []), ...(trust.verifierKeys || []).map((k) => `verifier key ${k}`)],
    subject: subject.digest && subject.digest.sha256 ? `sha256:${subject.digest.sha256}` : "",
    sequence: p.sequence,
    previous: p.previous,
    keyid: p.signer ? p.signer.keyid : null,
    criteriaDigest: p.criteriaDigest,
    about: p.about || null,
    decision: p.policyDecision || null,
    supersedes: p.supersedesReceiptId || null,
    checks,
  };
}

/** An amount as the gateway sends it ({amount, asset, decimals}: minor units of a currency
 * with its own decimals, "25" USD is 0.25 USD) as people read it; "" for none. */
export function price(amount) {
  if (!amount || amount.amount == null) return "";
  return money(amount.amount, { code: amount.asset, decimals: Number(amount.decimals) || 0 });
}

/**
 * A paid call's money as it stands ({state, charged, refunded, held_until, paid_at}) in words:
 * "0.25 USDC, held until …", "0.25 USDC refunded after a report", "nothing charged".
 */
export function moneyState(m) {
  if (!m) return "";
  const charged = price(m.charged);
  switch (m.state) {
    case "held":
      return `${charged}, held until ${shortTime(m.held_until)}`;
    case "reported":
      return `${charged}, held while its report is ruled on`;
    case "paid":
      return `${charged}, paid to the provider`;
    case "refunded_after_report":
      return `${price(m.refunded)} refunded after a report`;
    case "reserved":
      return `${charged} reserved (running)`;
    default:
      return "nothing charged";
  }
}

/**
 * The page a hash names: "#/calls/abc?verdict=FAIL" is {parts: ["calls", "abc"], query:
 * {verdict: "FAIL"}}. Parts are decoded (a malformed escape is kept as typed); blank query
 * values are dropped, so an emptied filter is no filter.
 */
export function parseHash(hash) {
  const text = String(hash ?? "").replace(/^#\/?/, "");
  const at = text.indexOf("?");
  const path = at < 0 ? text : text.slice(0, at);
  const decode = (part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  };
  const query = {};
  for (const [name, value] of new URLSearchParams(at < 0 ? "" : text.slice(at + 1))) {
    if (value.trim() !== "") query[name] = value.trim();
  }
  return { parts: path.split("/").filter(Boolean).map(decode), query };
}

/** The hash of a page and its filters, the inverse of parseHash (blank filters left out). */
export function hashOf(parts, query = {}) {
  const path = parts.map((p) => encodeURIComponent(String(p))).join("/");
  const kept = Object.entries(query).filter(([, v]) => v != null && String(v).trim() !== "");
  const search = new URLSearchParams(kept.map(([k, v]) => [k, String(v).trim()])).toString();
  return `#/${path}` + (search ? `?${search}` : "");
}

/** A provider's failure rate as the service gives it (an exact ratio, "1/3", or null) in
 * words: "1/3 (33.3%)", "0%"; null is "no observations" (nothing was judged in the window,
 * which is not a rate of zero). */
export function failureRate(rate) {
  if (rate == null) return "no observations";
  const match = /^(\d+)(?:\/(\d+))?$/.exec(String(rate));
  if (!match || match[2] === "0") return String(rate);
  const share = Number(match[1]) / Number(match[2] || 1);
  const shown = `${Math.round(share * 1000) / 10}%`;
  return match[2] ? `${rate} (${shown})` : shown;
}

/**
 * What `me` may do on a forwarded call's page: "report" (its caller, while the call is
 * reportable and unreported — the service checks the deadline against its own clock) and
 * "ruling" (an admin who is neither party, on an open report). Each is [action, label].
 */
export function callActionsFor(call, me) {
  if (!call || !me) return [];
  const out = [];
  if (call.caller === me.id && call.report_deadline && !call.report) {
    out.push(["report", "Report a bad result"]);
  }
  const admin = (me.roles || []).includes("admin");
  const party = me.id === call.caller || me.id === call.provider;
  if (admin && !me.extra_key && !party && call.report && call.report.status === "open") {
    out.push(["ruling", "Rule on the report"]);
  }
  return out;
}

/** Event types typed comma- or space-separated ("call.settled, webhook.test") as the API takes
 * them; none typed is null (every event type). */
export function eventTypes(text) {
  const found = String(text ?? "")
    .split(/[\s,]+/)
    .filter((t) => t.length > 0);
  return found.length ? [...new Set(found)] : null;
}

/**
 * One form's Idempotency-Key: the same key for every send of the same inputs (a second click,
 * a retry after a refusal or a lost connection, which the service then answers from its
 * record instead of acting twice), a new one once the inputs change (the service refuses a
 * key reused for other inputs) or after a success (`done`). `fresh` makes a key.
 *
 * With `store` (the tab's `sessionStorage`) and a `name`, the key outlives the page: a form
 * sent, its answer lost, and sent again with the same inputs after a reload carries the first
 * key, so the service answers it from its record (before, a reload made a new key, and a task
 * posted whose answer was lost was posted and funded again). A success forgets it.
 */
export function onceKey(fresh, store = null, name = "") {
  const slot = `adjudge.once.${name}`;
  let key = null;
  let sent = null;
  const kept = () => {
    try {
      const found = store ? JSON.parse(store.getItem(slot) ?? "null") : null;
      return found && typeof found.key === "string" && typeof found.sent === "string" ? found : null;
    } catch {
      return null; // storage refused, or not what this wrote: a new key
    }
  };
  const keep = (value) => {
    try {
      if (!store) return;
      if (value) store.setItem(slot, JSON.stringify(value));
      else store.removeItem(slot);
    } catch {
      // storage full or refused: the key lives as long as the page, as without a store
    }
  };
  return {
    for(inputs) {
      const text = JSON.stringify(inputs ?? null);
      if (key === null) {
        const found = kept();
        if (found && found.sent === text) [key, sent] = [found.key, found.sent];
      }
      if (key === null || text !== sent) {
        key = fresh();
        sent = text;
        keep({ key, sent });
      }
      return key;
    },
    done() {
      key = null;
      sent = null;
      keep(null);
    },
  };
}

// --- sealed criteria ------------------------------------------------------------------------

/**
 * RFC 8785 (JCS) JSON of a plain JSON value: object members sorted by their names' UTF-16 code
 * units (JavaScript's own string order), strings and numbers as ECMAScript's JSON.stringify
 * writes them, which is the serialization RFC 8785 adopts. What a seal's commitment hashes.
 */
export function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const names = Object.keys(value).sort();
    return `{${names.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The reveal of a sealed answer under `salt`: the document the commitment is the digest of. */
export function revealOf(answer, salt) {
  return { criteria: { expected_answer: String(answer) }, salt: String(salt) };
}

/** Bytes as base64url without padding (a salt of random bytes, as the CLI writes it). */
export function base64url(bytes) {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A digest's bytes as a commitment: "sha256:" and lowercase hex. */
export function commitmentOf(digestBytes) {
  return "sha256:" + Array.from(digestBytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A reveal as pasted (the reveal file's JSON): { reveal } ready to send, or { error } with a
 * sentence. Only the shape is checked here; whether it opens the seal is the service's to say.
 */
export function parseReveal(text) {
  let value;
  try {
    value = JSON.parse(String(text ?? ""));
  } catch {
    return { error: "Paste the reveal file's JSON: {\"criteria\": {…}, \"salt\": \"…\"}." };
  }
  const ok =
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    value.criteria !== null &&
    typeof value.criteria === "object" &&
    !Array.isArray(value.criteria) &&
    typeof value.salt === "string";
  if (!ok) return { error: "A reveal is {\"criteria\": {…}, \"salt\": \"…\"}, as the seal wrote it." };
  return { reveal: { criteria: value.criteria, salt: value.salt } };
}

/** A sealed task's seal in words, for the task's facts (null for a task that is not sealed). */
export function sealText(task) {
  const seal = task && task.seal;
  if (!seal) return null;
  if (seal.broken) return `broken: ${seal.broken}; the task escalated`;
  if (seal.revealed) return "revealed: judged against the answer committed at posting";
  if (seal.reveal_due_at) return `not revealed; the poster must reveal by ${shortTime(seal.reveal_due_at)}`;
  return "not revealed: the poster reveals it when a submission is to be judged";
}

/** Rows as CSV (RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes
 * doubled; lines end CRLF). A field that a spreadsheet would run as a formula (it starts with
 * =, +, - or @ and is not a number) gets a leading apostrophe. */
export function csv(rows) {
  const field = (value) => {
    let text = value == null ? "" : String(value);
    if (/^[=+\-@]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return rows.map((row) => row.map(field).join(",") + "\r\n").join("");
}

/** The ledger's kinds (each transfer's memo), in the order the page offers them. */
export const LEDGER_KINDS = ["deposit", "fund", "payout", "fee", "refund", "reserve", "charge", "void", "release", "report refund"];

/** One ledger line as a CSV row, beside `LEDGER_CSV_HEADER`: the amount in the currency and in
 * minor units (for a spreadsheet that must add exactly). */
export const LEDGER_CSV_HEADER = ["time", "account", "other side", "kind", `amount (${CURRENCY.code})`, "amount (minor units)", "task", "receipt", "transfer"];
export function ledgerRow(line) {
  return [line.at, line.account, line.counterpart || "", line.kind, formatAmount(line.amount, CURRENCY.decimals), line.amount, line.task_id || "", line.receipt_id || "", line.txn];
}

/**
 * Where a small chart's marks go, as numbers (the page draws them as SVG; no DOM here).
 * `labels` are the x positions (days); each of `series` is {name, values, kind: "bar" |
 * "line"}: bars stack per label, lines join their points; `refs` are horizontal lines
 * {name, value} (a declared rate, a threshold). The y scale starts at 0 and ends at the
 * largest stack, point or reference (1 when all are 0). `format` writes a value, `tick` a
 * label under the axis (a day as "12-04").
 */
export function chartGeometry({ labels, series, refs = [], width = 640, height = 180, format = String, tick = (l) => String(l).slice(5) }) {
  const pad = { left: 88, right: 8, top: 8, bottom: 22 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const bars = series.filter((s) => s.kind !== "line");
  const lines = series.filter((s) => s.kind === "line");
  const stacks = labels.map((_, i) => bars.reduce((sum, s) => sum + Math.max(0, Number(s.values[i]) || 0), 0));
  const points = lines.flatMap((s) => s.values.filter((v) => v != null).map(Number).filter((v) => Number.isFinite(v)));
  const top = Math.max(0, ...stacks, ...points, ...refs.map((r) => Number(r.value) || 0)) || 1;
  const y = (v) => pad.top + plotH - (Math.max(0, v) / top) * plotH;
  const step = plotW / Math.max(1, labels.length);
  const barW = Math.max(1, step * 0.7);
  const x = (i) => pad.left + step * i + (step - barW) / 2;
  const out = { width, height, left: pad.left, right: width - pad.right, bars: [], lines: [], refs: [], yTicks: [], xTicks: [] };
  labels.forEach((label, i) => {
    let base = 0;
    bars.forEach((s, k) => {
      const v = Math.max(0, Number(s.values[i]) || 0);
      if (v > 0) {
        out.bars.push({ x: x(i), y: y(base + v), w: barW, h: y(base) - y(base + v), series: k, title: `${label} · ${s.name}: ${format(v)}` });
      }
      base += v;
    });
  });
  lines.forEach((s, k) => {
    const at = s.values
      .map((v, i) => [i, v == null ? NaN : Number(v)])
      .filter(([, v]) => Number.isFinite(v))
      .map(([i, v]) => `${(x(i) + barW / 2).toFixed(1)},${y(v).toFixed(1)}`);
    out.lines.push({ series: bars.length + k, name: s.name, points: at.join(" ") });
  });
  refs.forEach((r, k) => out.refs.push({ series: k, name: r.name, y: y(Number(r.value) || 0), label: `${r.name}: ${format(Number(r.value) || 0)}` }));
  for (const v of [0, top / 2, top]) out.yTicks.push({ y: y(v), label: format(v) });
  const every = Math.max(1, Math.ceil(labels.length / 10));
  labels.forEach((label, i) => {
    if (i % every === 0 || i === labels.length - 1) out.xTicks.push({ x: x(i) + barW / 2, label: tick(label) });
  });
  return out;
}

/** Minor units as a plain number of the currency's units, for a chart's scale only (what a
 * person reads beside it is `money`, exact). */
export function units(minor, currency = CURRENCY) {
  return Number(minor) / 10 ** currency.decimals;
}

/** An exact ratio ("1/4") as a number, null for none. */
export function ratioValue(rate) {
  if (rate == null) return null;
  const m = /^(\d+)(?:\/(\d+))?$/.exec(String(rate));
  if (!m || m[2] === "0") return null;
  return Number(m[1]) / Number(m[2] || 1);
}
