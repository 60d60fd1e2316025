// The web UI: a thin client of the JSON API under /api/v1, with the caller's API key kept in
// this browser tab (sessionStorage). Every text from the service is put on the page as text,
// never as HTML: briefs and results are written by other people. Every call, downloads
// included, is a fetch with the key; the page never navigates to the API.
import {
  CURRENCY,
  LEDGER_CSV_HEADER,
  LEDGER_KINDS,
  actionsFor,
  callActionsFor,
  chartGeometry,
  chainCommand,
  csv,
  errorText,
  eventTypes,
  failureRate,
  hashOf,
  ledgerRow,
  lintView,
  money,
  moneyState,
  notFoundText,
  onceKey,
  parseAmount,
  parseCriteria,
  parseHash,
  parseTakeWindow,
  percent,
  price,
  ratioValue,
  reasonLines,
  receiptFacts,
  replayCommands,
  shortTime,
  takeWindowText,
  units,
  verifyCommand,
  words,
  base64url,
  canonicalJson,
  commitmentOf,
  parseReveal,
  revealOf,
  sealText,
  shellWord,
} from "./ui.js";
import { batchPage } from "./batch.js";

const API = "/api/v1";
const main = document.querySelector("main");
const who = document.querySelector("#who");
/** The key form and its one alert region: on the sign-in page while no key is accepted, in the
 * header once one is (the same nodes, moved, so an error is never drawn twice). */
const signInBox = document.querySelector("#sign-in");
const keyError = document.querySelector("#key-error");
let me = null;

/** An element: h("td", {class: "x"}, "text", child, ...). Strings become text nodes. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, "");
    else if (value !== false && value != null) el.setAttribute(name, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Put these on the page (nested lists flattened; null and false skipped). */
function show(...nodes) {
  // The key form is moved, never redrawn: take it out of a page before the page is replaced.
  if (main.contains(signInBox)) who.before(signInBox);
  main.replaceChildren(h("div", {}, ...nodes));
  for (const t of main.querySelectorAll("table")) alignNumbers(t);
}

/** A figure in a cell: an amount ("1.5 USDC", "-0.25 USDC"), a count, a share ("50%", "1/3"). */
const FIGURE = /^[+\-\u2212]?\d[\d,.]*(?:%| [A-Z][A-Z0-9]{1,9})?(?: \(\d[\d.]*%\))?$|^\d+\/\d+(?: \(\d[\d.]*%\))?$/;

/** A table's columns of figures aligned right, in tabular digits, their heads too (a column
 * is one when every cell with text in it is a figure; the CSS says how a "num" cell looks). */
function alignNumbers(tableEl) {
  const head = tableEl.tHead ? [...tableEl.tHead.rows[0]?.cells || []] : [];
  const rows = [...tableEl.tBodies].flatMap((b) => [...b.rows]);
  if (!rows.length) return;
  const width = Math.max(head.length, ...rows.map((r) => r.cells.length));
  for (let i = 0; i < width; i += 1) {
    const cells = rows.map((r) => r.cells[i]).filter((c) => c && c.textContent.trim() !== "");
    const figures = cells.length > 0 && cells.every((c) => c.classList.contains("num") || FIGURE.test(c.textContent.trim()));
    if (!figures) continue;
    for (const c of cells) c.classList.add("num");
    if (head[i]) head[i].classList.add("num");
  }
}

let tickets = 0;
/**
 * A view's right to the page: each view claims one when it starts, and what it renders after
 * its requests is shown only if no later view started meanwhile (a slow answer to an earlier
 * click never replaces the page the person has moved on to).
 */
function claim() {
  const mine = ++tickets;
  return (...nodes) => {
    if (mine === tickets) show(...nodes);
  };
}

function key() {
  return sessionStorage.getItem("adjudge-key") || "";
}

/** A request to the API; a state change carries `idempotencyKey` (a form's, from `sending`)
 * or a fresh one. Throws the error text; a 404's error also carries `missing`, what a page
 * whose address named the id says instead (`route` shows it: the service's sentence repeats
 * the id from the address). */
async function api(method, path, body, idempotencyKey) {
  const headers = { Accept: "application/json" };
  if (key()) headers.Authorization = `Bearer ${key()}`;
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers["Idempotency-Key"] = idempotencyKey || crypto.randomUUID();
  }
  const response = await fetch(API + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", // an answer is this account's: never kept for the next person here
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const err = new Error(errorText(response.status, data));
    if (response.status === 404) err.missing = notFoundText(data);
    throw err;
  }
  return data;
}

/** Save `text` as a file named `name` (a Blob made here; nothing is fetched for it). */
function download(name, text, type = "application/json") {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = h("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function failure(err) {
  return h("p", { class: "error", role: "alert" }, err.message);
}

/**
 * How a form that moves money (or changes anything) sends: one Idempotency-Key per form
 * (onceKey: the same for a retry of the same inputs, a new one once they change or after a
 * success), and the form's `buttons()` disabled from the first click until its request and the
 * page it leads to are done. So a double click, a second click or a second Enter sends nothing
 * more; and a request that went out twice all the same would carry one key, which the service
 * answers from its record instead of acting twice.
 *
 * `send(inputs, work)` runs `work(key)`, which sends and shows what follows; a call while one
 * runs does nothing. A failure (`work` throws) is shown in `status` and the buttons work again.
 * After a success they stay disabled — the page is being shown anew, and a click meanwhile
 * would be a second submission — unless `{ stays: true }` says the form remains (a dry run).
 */
function sending(buttons, status, name = null) {
  // A form that is not bound to a task's state (posting one, adding an endpoint) keeps its
  // key in the tab's session under `name`: sent again after a reload, it is the same request.
  const keys = onceKey(() => crypto.randomUUID(), name ? window.sessionStorage : null, name ?? "");
  let busy = false;
  const release = () => {
    busy = false;
    for (const b of buttons()) b.disabled = false;
  };
  return async (inputs, work, { stays = false } = {}) => {
    if (busy) return;
    busy = true;
    for (const b of buttons()) b.disabled = true;
    status.textContent = "…";
    try {
      await work(keys.for(inputs));
    } catch (err) {
      status.replaceChildren(failure(err));
      release();
      return;
    }
    keys.done();
    if (stays) release();
  };
}

function statusBadge(status) {
  return h("span", { class: `status ${status}` }, words(status));
}

/** A verdict or a check's outcome as words ("EMPTY_UNVERIFIED" reads "EMPTY UNVERIFIED");
 * none (a call that ended in an error) reads "no verdict". */
function verdictBadge(verdict) {
  if (verdict == null) return h("span", { class: "verdict-word none" }, "no verdict");
  return h("span", { class: `verdict-word ${String(verdict).toLowerCase()}` }, words(verdict));
}

/** A definition list of [term, value] pairs (a null value leaves its pair out). */
function factList(pairs) {
  return h(
    "dl",
    { class: "facts" },
    pairs.filter(([, v]) => v != null).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

/** A table with a header row; `rows` are lists of cells (each a node, text or list). */
function table(cls, headers, rows) {
  return h(
    "table",
    { class: cls },
    h("thead", {}, h("tr", {}, headers.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => (c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c)))))),
  );
}

/** A JSON value pretty-printed, as text. */
function jsonBlock(value, label) {
  return h("pre", { class: "json", "aria-label": label }, JSON.stringify(value, null, 2));
}

/** An API path with its query (blank values left out). */
function withQuery(path, params) {
  const kept = Object.entries(params).filter(([, v]) => v != null && String(v) !== "");
  const search = new URLSearchParams(kept).toString();
  return search ? `${path}?${search}` : path;
}

function providerLink(provider) {
  return h("a", { href: hashOf(["providers", provider, "quality"]), class: "provider-link" }, provider);
}

/** A label around a field, as the forms lay them out. */
function labelled(text, input) {
  return h("label", {}, h("span", {}, text), input);
}

/** A command to copy, with a button that copies it. */
function command(text, label) {
  const code = h("code", { class: "command", "aria-label": label }, text);
  const copy = h(
    "button",
    {
      type: "button",
      class: "copy",
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(text);
          copy.textContent = "Copied";
        } catch {
          copy.textContent = "Select and copy";
        }
      },
    },
    "Copy",
  );
  return h("div", { class: "command-line" }, h("pre", {}, code), copy);
}

// --- signing in -----------------------------------------------------------------------------

async function signIn() {
  me = null;
  who.replaceChildren();
  keyError.replaceChildren();
  if (!key()) {
    who.append("Not signed in.");
    return;
  }
  try {
    me = await api("GET", "/accounts/me");
    who.append(
      h("strong", {}, me.id),
      ` (${me.roles.join(", ")}) · balance `,
      h("span", { id: "balance" }, money(me.balance)),
      ...(me.held && me.held !== "0" ? [" · held ", h("span", { id: "held" }, money(me.held))] : []),
      ` · reputation ${me.reputation} · `,
      h("button", { type: "button", class: "link", onclick: signOut }, "Sign out"),
    );
  } catch (err) {
    // Said once, in the alert region beside the key (replaced, never added to, on each try).
    who.append("Not signed in.");
    const refused = err.message.startsWith("UNAUTHORIZED");
    const said = refused ? "The service knows no such key: check that it was pasted whole, or ask an admin for a new one." : err.message;
    keyError.replaceChildren(h("p", { class: "error", role: "alert" }, said));
  }
}

/** Forget this tab's key and everything shown of its account: the sign-in page again (on a
 * shared computer, the next person finds nothing of the last one's). */
function signOut() {
  sessionStorage.removeItem("adjudge-key");
  me = null;
  who.replaceChildren("Not signed in.");
  signInPage();
}

/** The sign-in page: what a key is and where it is kept, and the key form under it. */
function signInPage() {
  const page = h(
    "section",
    { class: "sign-in-page", "aria-labelledby": "sign-in-title" },
    h("h2", { id: "sign-in-title" }, "Sign in"),
    h("p", {}, "Paste the API key of your account. ", h("code", {}, "make demo"), " prints keys for its demo accounts."),
    h(
      "p",
      { class: "muted" },
      "The key is kept in this browser tab's session storage and sent to this service alone. The browser may keep that storage on disk until the session ends for good (to restore tabs): on a shared computer, close the browser and clear its data when you leave.",
    ),
  );
  claim()(page);
  page.append(signInBox);
  document.querySelector("#key").focus();
}

/** The key form back in the header, once a key is accepted. */
function keyFormInHeader() {
  if (signInBox.parentElement !== who.parentElement) who.before(signInBox);
}

document.querySelector("#key-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.querySelector("#key");
  sessionStorage.setItem("adjudge-key", input.value.trim());
  input.value = "";
  await signIn();
  route();
});

// --- tasks ------------------------------------------------------------------------------------

const TASK_STATUSES = ["funded", "assigned", "submitted", "awaiting_verification", "failed", "disputed", "escalated", "completed", "cancelled"];
const TASK_FILTERS = ["status", "mode", "poster", "agent", "text"];

async function taskList(query = {}, cursor) {
  const render = claim();
  const filters = Object.fromEntries(TASK_FILTERS.map((k) => [k, query[k]]));
  const page = await api("GET", withQuery("/tasks", { ...filters, limit: 50, cursor }));
  const tasks = page.tasks;
  const text = h("input", { type: "search", name: "text", value: query.text || "", "aria-label": "Search titles", placeholder: "words in the title" });
  const status = h(
    "select",
    { name: "status", "aria-label": "Status" },
    h("option", { value: "" }, "any status"),
    TASK_STATUSES.map((v) => h("option", { value: v, selected: v === query.status }, words(v))),
  );
  const mode = h(
    "select",
    { name: "mode", "aria-label": "Mode" },
    h("option", { value: "" }, "any mode"),
    ["auto", "agent", "manual"].map((v) => h("option", { value: v, selected: v === query.mode }, v)),
  );
  const poster = h("input", { type: "text", name: "poster", value: query.poster || "", "aria-label": "Poster", placeholder: "poster" });
  const agent = h("input", { type: "text", name: "agent", value: query.agent || "", "aria-label": "Agent", placeholder: "agent" });
  const filtered = TASK_FILTERS.some((k) => query[k]);
  const rows = tasks.map((t) => [
    h("a", { href: `#/tasks/${t.id}` }, t.title),
    t.mode,
    statusBadge(t.status),
    h("td", { class: "num" }, money(t.reward)),
    shortTime(t.deadline),
    t.poster,
    t.agent || "",
  ]);
  render(
    h("h2", {}, "Tasks"),
    h(
      "form",
      {
        class: "filters task-filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["tasks"], { text: text.value, status: status.value, mode: mode.value, poster: poster.value, agent: agent.value });
        },
      },
      text,
      status,
      mode,
      poster,
      agent,
      h("button", { type: "submit" }, "Search"),
      filtered ? h("a", { href: "#/tasks" }, "Clear") : null,
    ),
    tasks.length
      ? table("tasks", ["Title", "Mode", "Status", "Reward", "Deadline", "Poster", "Agent"], rows)
      : h("p", {}, page.next_cursor ? "None of the tasks this page read matches; older ones may." : filtered ? "No task matches these filters." : "No tasks yet."),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => taskList(query, page.next_cursor) }, "Older tasks"))
      : null,
  );
}

function breakdown(result) {
  if (!result || !result.breakdown || !result.breakdown.length) return null;
  return h(
    "table",
    { class: "breakdown" },
    h("thead", {}, h("tr", {}, h("th", {}, "Item"), h("th", {}, "Score"), h("th", {}, "Weight"), h("th", {}, "Note"))),
    h(
      "tbody",
      {},
      result.breakdown.map((item) =>
        h(
          "tr",
          {},
          h("td", {}, item.name),
          h("td", { class: "num" }, percent(item.score)),
          h("td", { class: "num" }, item.weight),
          h("td", {}, item.reason || ""),
        ),
      ),
    ),
  );
}

function verdictCard(v) {
  const result = v.verification_result;
  return h(
    "section",
    { class: `verdict ${v.passed ? "pass" : "fail"}` },
    h(
      "h4",
      {},
      `${v.kind === "ruling" ? "Ruling on attempt" : "Attempt"} ${v.attempt}: ${v.passed ? "passed" : "failed"}`,
      v.score == null ? "" : ` · score ${v.score}`,
      v.authority ? ` · ${v.authority}` : "",
      v.judge ? ` (${v.judge})` : "",
      v.at ? ` · ${shortTime(v.at)}` : "",
    ),
    v.reasons && v.reasons.length ? h("ul", {}, v.reasons.map((r) => h("li", {}, r))) : null,
    breakdown(result),
    v.receipt_id ? h("p", {}, "Receipt ", h("a", { href: `#/receipts/${v.receipt_id}`, class: "receipt-link" }, v.receipt_id)) : null,
  );
}

/** Runs a task action under `key` and shows the task again (the balance too: money may have
 * moved). Throws what went wrong, for `sending` to show. */
async function perform(task, path, body, key) {
  await api("POST", `/tasks/${task.id}/${path}`, body, key);
  await signIn();
  await taskDetail(task.id);
}

/** One draft, two buttons: a dry run (no attempt used) and the submission. */
function deliverForm(task, offered) {
  const status = h("p", { class: "status-line" });
  const text = h("textarea", { rows: 8, required: true, "aria-label": "Result", name: "result" });
  const buttons = offered.map(([action, label]) =>
    h("button", { type: "submit", value: action, name: "action" }, label),
  );
  // One sender for both buttons: neither goes out while the other is in flight.
  const send = sending(() => buttons, status);
  return h(
    "form",
    {
      class: "action deliver",
      onsubmit: async (event) => {
        event.preventDefault();
        const action = event.submitter ? event.submitter.value : "submit";
        const body = { result: text.value };
        if (action === "dry-run") {
          const dryRun = async (idem) => {
            const answer = await api("POST", `/tasks/${task.id}/dry-run`, body, idem);
            status.replaceChildren(
              h("strong", { class: answer.passed ? "pass-text" : "fail-text" }, `Dry run: ${answer.passed ? "would pass" : "would fail"}, score ${answer.score}.`),
              h("ul", {}, (answer.reasons || []).map((r) => h("li", {}, r))),
              h("p", {}, answer.note || ""),
            );
          };
          await send(["dry-run", body], dryRun, { stays: true });
          return;
        }
        await send(["submissions", body], (idem) => perform(task, "submissions", body, idem));
      },
    },
    h("h4", {}, "Your result"),
    text,
    h("div", { class: "buttons" }, buttons),
    status,
  );
}

/** The form for one action on a task; runs it and shows the task again. */
function actionForm(task, action, label) {
  const status = h("p", { class: "status-line" });
  const fields = [];
  let body = () => undefined;
  if (action === "review") {
    const verdict = h(
      "select",
      { "aria-label": "Verdict" },
      h("option", { value: "pass" }, "Approve"),
      h("option", { value: "fail" }, "Reject"),
    );
    const reasons = h("textarea", { rows: 3, "aria-label": "Reasons", placeholder: "Reasons, one per line (at most 20)" });
    fields.push(verdict, reasons);
    // Bound to the submission this page shows: if the agent submitted again since, the
    // service refuses (SUBMISSION_CHANGED) instead of judging work nobody here read.
    const shown = { attempt: task.attempts, result_digest: task.result_digest ?? undefined };
    body = () => ({ passed: verdict.value === "pass", reasons: reasonLines(reasons.value), ...shown });
  } else if (action === "dispute") {
    const reason = h("input", { type: "text", "aria-label": "Why", placeholder: "Why" });
    fields.push(reason);
    body = () => ({ reason: reason.value });
  } else if (action === "ruling") {
    const pay = h(
      "select",
      { "aria-label": "Ruling" },
      h("option", { value: "agent" }, "Pay the agent"),
      h("option", { value: "poster" }, "Refund the poster"),
    );
    const note = h("input", { type: "text", "aria-label": "Note", placeholder: "Note" });
    fields.push(pay, note);
    body = () => ({ pay_agent: pay.value === "agent", note: note.value });
  } else if (action === "reveal") {
    const pasted = h("textarea", {
      rows: 4,
      "aria-label": "Reveal to send",
      placeholder: '{"criteria": {"expected_answer": "…"}, "salt": "…"} (the reveal file you kept)',
    });
    const file = h("input", {
      type: "file",
      accept: "application/json,.json",
      "aria-label": "Reveal file",
      onchange: async () => {
        if (file.files && file.files[0]) pasted.value = await file.files[0].text();
      },
    });
    fields.push(pasted, file);
    body = () => {
      const parsed = parseReveal(pasted.value);
      if (parsed.error) throw new Error(parsed.error);
      return parsed.reveal;
    };
  } else if (action === "verdict-help") {
    return h(
      "div",
      { class: "action" },
      h("h4", {}, label),
      h(
        "p",
        {},
        "A verifier's verdict is signed with the verifier's key, which does not belong in a " +
          "browser. From a terminal, quoting the brief and the result word for word (an " +
          "ungrounded verdict goes to the poster; add --fail and --reason to fail it), or " +
          "run adjudge worker:",
      ),
      command(
        `adjudge task verdict ${shellWord(task.id)} --verifier-key KEY.pem ` +
          `--quote-brief BRIEF_EXCERPT --quote-result RESULT_EXCERPT`,
        "Verdict command",
      ),
    );
  }
  const path = action === "dispute" ? "disputes" : action;
  const button = h("button", { type: "submit" }, label);
  const send = sending(() => [button], status);
  return h(
    "form",
    {
      class: "action",
      onsubmit: async (event) => {
        event.preventDefault();
        let sent;
        try {
          sent = body();
        } catch (err) {
          status.replaceChildren(failure(err));
          return;
        }
        await send([path, sent], (idem) => perform(task, path, sent, idem));
      },
    },
    fields.length ? h("h4", {}, label) : null,
    fields,
    button,
    status,
  );
}

function actions(task) {
  const offered = actionsFor(task, me);
  if (!offered.length) return h("p", {}, "Nothing for you to do on this task now.");
  const delivering = offered.filter(([a]) => a === "submit" || a === "dry-run");
  // The dry run first: it is the one that uses no attempt.
  delivering.sort(([a]) => (a === "dry-run" ? -1 : 1));
  const out = [];
  if (delivering.length) out.push(deliverForm(task, delivering));
  for (const [action, label] of offered) {
    if (action === "later") out.push(h("p", { class: "later" }, label));
    else if (action !== "submit" && action !== "dry-run") out.push(actionForm(task, action, label));
  }
  return out;
}

async function taskDetail(id) {
  const render = claim();
  const t = await api("GET", `/tasks/${encodeURIComponent(id)}`);
  const facts = [
    ["Status", [statusBadge(t.status), t.ending ? ` (${words(t.ending)})` : ""]],
    ["Mode", t.mode + (t.verifier ? `, verifier ${t.verifier}` : "")],
    ["Reward", money(t.reward)],
    ["Poster", t.poster],
    ["Agent", t.agent || "none yet"],
    ["Attempts", `${t.attempts} of ${t.max_attempts}`],
    ["Posted", shortTime(t.posted_at)],
    ["Deadline", shortTime(t.deadline)],
    ["Take window", takeWindowText(t) || "none: a take lasts until the deadline"],
    ["Private", t.private ? "yes" : "no"],
  ];
  if (t.panel) {
    // Each verifier's vote on the latest submission: a third party sees the quorum form.
    const votes = t.panel.verifiers.map((v) => `${v.verifier}: ${v.vote || "not yet"}`).join(", ");
    facts.push(["Quorum", `${t.panel.quorum} of ${t.panel.verifiers.length} must agree`]);
    facts.push(["Votes", votes]);
  }
  if (t.seal) {
    facts.push(["Sealed answer", sealText(t)]);
    facts.push(["Commitment", h("span", { class: "digest", "aria-label": "Commitment" }, t.seal.commitment)]);
  }
  render(
    h("p", {}, h("a", { href: "#/tasks" }, "← Tasks")),
    h("h2", {}, t.title),
    h("dl", { class: "facts" }, facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    t.brief ? [h("h3", {}, "Brief"), h("pre", { class: "text" }, t.brief)] : null,
    t.criteria && Object.keys(t.criteria).length
      ? [h("h3", {}, "Criteria"), h("pre", {}, JSON.stringify(t.criteria, null, 2))]
      : null,
    t.seal && t.seal.reveal
      ? [
          h("h3", {}, "Reveal"),
          h("pre", { "aria-label": "Revealed criteria" }, JSON.stringify(t.seal.reveal, null, 2)),
          h("p", { class: "muted" }, "Check the verdict against the commitment offline:"),
          command(
            `adjudge task verify-seal --receipt RECEIPT.json --reveal REVEAL.json ` +
              `--commitment ${shellWord(t.seal.commitment)} --key FINGERPRINT`,
            "Verify-seal command",
          ),
        ]
      : null,
    t.submissions && t.submissions.length
      ? [
          h("h3", {}, "Submissions"),
          t.submissions.map((s) =>
            h(
              "section",
              { class: "submission" },
              h("h4", {}, `Attempt ${s.attempt} · ${shortTime(s.submitted_at)}`),
              h("p", { class: "digest" }, s.digest),
              s.result == null ? null : h("pre", { class: "text" }, s.result),
            ),
          ),
        ]
      : null,
    t.verdicts && t.verdicts.length ? [h("h3", {}, "Verdicts"), t.verdicts.map(verdictCard)] : null,
    t.lapses && t.lapses.length
      ? [
          h("h3", {}, "Lapsed takes"),
          h(
            "ul",
            { class: "lapses" },
            t.lapses.map((l) =>
              h("li", {}, `${l.agent} took it ${shortTime(l.taken_at)}; the take lapsed at ${shortTime(l.at)} with nothing submitted`),
            ),
          ),
        ]
      : null,
    t.disputes && t.disputes.length
      ? [
          h("h3", {}, "Disputes"),
          t.disputes.map((d) =>
            h(
              "section",
              { class: "dispute" },
              h("h4", {}, `Round ${d.attempt} · disputed by ${d.by} · ${shortTime(d.at)}`),
              d.reason ? h("pre", { class: "text" }, d.reason) : h("p", {}, "No reason given."),
            ),
          ),
        ]
      : null,
    t.receipts && t.receipts.length
      ? [
          h("h3", {}, "Receipts"),
          h("ul", { class: "receipts" }, t.receipts.map((r) => h("li", {}, h("a", { href: `#/receipts/${r}` }, r)))),
        ]
      : null,
    me ? [h("h3", {}, "What you can do"), actions(t)] : null,
  );
}

async function postForm() {
  const render = claim();
  if (me.extra_key) {
    // The service refuses an extra key this (PRIMARY_KEY_REQUIRED): its budget is for calls.
    render(
      h("h2", {}, "Post a task"),
      h("p", {}, `Only the account's own key posts and funds tasks; you signed in with the extra key ${me.extra_key.id} (${me.extra_key.label}), whose budget is for paid calls.`),
    );
    return;
  }
  const title = h("input", { type: "text", required: true, maxlength: 200, name: "title" });
  const brief = h("textarea", { rows: 4, name: "brief" });
  const reward = h("input", { type: "text", required: true, inputmode: "decimal", name: "reward", placeholder: `2.5 = 2.5 ${CURRENCY.code}` });
  const hours = h("input", { type: "number", min: 1, max: 2160, value: 72, name: "hours" });
  const takeWindow = h("input", { type: "text", inputmode: "numeric", name: "take_window", placeholder: "blank: a take lasts until the deadline" });
  const mode = h("select", { name: "mode" }, ["manual", "auto", "agent"].map((m) => h("option", { value: m }, m)));
  const verifier = h("input", { type: "text", name: "verifier", placeholder: "for agent mode: an opted-in verifier, or several separated by commas" });
  const quorum = h("input", { type: "text", inputmode: "numeric", name: "quorum", placeholder: "with several verifiers: how many must agree (blank: a majority)" });
  const priv = h("input", { type: "checkbox", name: "private" });
  const lenient = h("input", { type: "checkbox", name: "lenient" });
  const criteria = h("textarea", { rows: 6, name: "criteria", placeholder: '{"min_length": 200, "contains_keywords": ["escrow"]}' });
  const sealed = h("input", { type: "text", name: "sealed_answer", placeholder: "the expected answer, revealed by you when work is to be judged" });
  const sealedFor = { answer: null, salt: null };
  const status = h("p", { class: "status-line" });
  const label = (text, input) => h("label", {}, h("span", {}, text), input);
  const button = h("button", { type: "submit" }, "Post and fund");
  const send = sending(() => [button], status, "post-task");
  const advice = h("section", { class: "lint", "aria-live": "polite", "aria-label": "Criteria advice" });
  const lintButton = h("button", { type: "button", onclick: () => lintCriteria() }, "Check these criteria");
  // Advice before funding: the service's lint of the criteria (and the brief an agent could
  // copy). It changes nothing, so it is sent as often as asked, one request at a time.
  async function lintCriteria() {
    const parsed = parseCriteria(criteria.value);
    if (parsed.error) {
      advice.replaceChildren(h("p", { class: "error", role: "alert" }, parsed.error));
      return;
    }
    lintButton.disabled = true;
    advice.replaceChildren(h("p", { class: "muted" }, "Checking…"));
    try {
      const view = lintView(await api("POST", "/criteria/lint", { criteria: parsed.criteria, brief: brief.value }), mode.value);
      const findings = view.findings.map((f) =>
        h(
          "li",
          {},
          h("code", { class: "finding-code" }, f.code),
          " ",
          h("span", { class: "muted" }, f.field),
          f.refused ? h("span", { class: "error" }, " (posting refuses this)") : null,
          h("br"),
          f.message,
        ),
      );
      // One element holds the parts: replaceChildren would write a null as the text "null".
      advice.replaceChildren(
        h(
          "div",
          {},
          h("h3", {}, view.heading),
          view.note ? h("p", { class: "muted" }, view.note) : null,
          findings.length ? h("ul", { class: "findings" }, findings) : null,
          h("h4", {}, "Gaming margin"),
          h("p", { class: "margin-summary" }, view.summary),
          view.margin == null
            ? null
            : h("pre", { class: "text margin-result", "aria-label": "Cheapest passing result" }, view.margin),
          h("p", { class: "muted" }, "Advice only: it changes no verdict and refuses no post."),
        ),
      );
    } catch (err) {
      advice.replaceChildren(failure(err));
    } finally {
      lintButton.disabled = false;
    }
  }
  render(
    h("h2", {}, "Post a task"),
    h(
      "form",
      {
        class: "post",
        onsubmit: async (event) => {
          event.preventDefault();
          const amount = parseAmount(reward.value);
          if (amount.error) {
            status.replaceChildren(h("span", { class: "error", role: "alert" }, amount.error));
            return;
          }
          const parsed = parseCriteria(criteria.value);
          if (parsed.error) {
            status.replaceChildren(h("span", { class: "error", role: "alert" }, parsed.error));
            return;
          }
          const takeHours = parseTakeWindow(takeWindow.value);
          if (takeHours.error) {
            status.replaceChildren(h("span", { class: "error", role: "alert" }, takeHours.error));
            return;
          }
          // Several verifiers are a panel: each votes, and `quorum` of them must agree.
          const named = verifier.value.split(",").map((v) => v.trim()).filter((v) => v);
          const body = {
            title: title.value,
            brief: brief.value,
            reward: amount.minor,
            deadline_hours: Number(hours.value),
            mode: mode.value,
            verifier: named.length === 1 ? named[0] : null,
            private: priv.checked,
            criteria: parsed.criteria,
            lenient_criteria: lenient.checked,
            take_window_hours: takeHours.hours,
          };
          if (named.length > 1) body.verifiers = named;
          if (quorum.value.trim() !== "") body.quorum = Number(quorum.value.trim());
          // A sealed answer never leaves the page: only its commitment is posted, and the
          // reveal (the answer and a fresh salt) is saved as a file for the poster to keep.
          // The salt is made once per answer, so a retry posts the same commitment.
          let reveal = null;
          if (sealed.value !== "") {
            if (!crypto.subtle) {
              status.replaceChildren(h("span", { class: "error", role: "alert" }, "Sealing needs a secure page (https or localhost)."));
              return;
            }
            if (sealedFor.answer !== sealed.value) {
              sealedFor.answer = sealed.value;
              sealedFor.salt = base64url(crypto.getRandomValues(new Uint8Array(32)));
            }
            reveal = revealOf(sealed.value, sealedFor.salt);
            const bytes = new TextEncoder().encode(canonicalJson(reveal));
            body.seal = commitmentOf(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
          }
          await send(body, async (idem) => {
            const task = await api("POST", "/tasks", body, idem);
            if (reveal) download(`reveal-${task.id}.json`, JSON.stringify(reveal, null, 2) + "\n");
            await signIn(); // the reward left the wallet
            location.hash = `#/tasks/${task.id}`;
          });
        },
      },
      label("Title", title),
      label("Brief", brief),
      label(`Reward (${CURRENCY.code})`, reward),
      label("Deadline (hours from now, 1 to 2160)", hours),
      label("Take window (hours an agent may hold it without submitting)", takeWindow),
      label("Mode", mode),
      label("Verifier", verifier),
      label("Quorum (verifiers who must agree)", quorum),
      label("Private", priv),
      label("Criteria (JSON)", criteria),
      label("Sealed answer (auto tasks: only its commitment is sent; you keep the reveal file)", sealed),
      label("Keep fields the check does not know", lenient),
      h("div", { class: "buttons" }, lintButton, button),
      status,
      advice,
    ),
  );
}

async function verifiers(cursor = null) {
  const render = claim();
  const page = await api("GET", `/verifiers${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`);
  const list = page.verifiers;
  render(
    h("h2", {}, "Verifiers who take agent-mode tasks"),
    list.length
      ? h("ul", {}, list.map((v) => h("li", {}, h("strong", {}, v.id), " · key ", h("span", { class: "digest" }, v.verifier_key || "none"), ` · reputation ${v.reputation}`)))
      : h("p", {}, "No verifier has opted in."),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => verifiers(page.next_cursor) }, "More verifiers"))
      : null,
  );
}

// --- receipts ---------------------------------------------------------------------------------

function decisionRows(decision) {
  const amounts = new Set(["fee", "payout", "refund", "reward", "penalty"]);
  // A paid call's decision names its amounts `…Minor` beside its `currency` (the ledger's).
  const inUnits = (name) => /Minor$/.test(name) && (decision.currency ?? CURRENCY.code) === CURRENCY.code;
  return Object.keys(decision)
    .sort()
    .flatMap((name) => {
      const value = decision[name];
      const digits = /^\d+$/.test(String(value));
      const shown =
        amounts.has(name) && digits
          ? money(value)
          : inUnits(name) && digits
            ? `${money(value)} (${value} minor units)`
            : value == null
              ? "null"
              : String(value);
      return [h("dt", {}, words(name)), h("dd", {}, shown)];
    });
}

async function receipt(id) {
  const render = claim();
  const [r, head] = await Promise.all([
    api("GET", `/receipts/${encodeURIComponent(id)}`),
    api("GET", "/receipts/head").catch(() => null),
  ]);
  const f = receiptFacts(r);
  if (!f) {
    render(h("h2", {}, `Receipt ${id}`), h("p", {}, "This receipt is not signed: there is nothing to verify."));
    return;
  }
  const file = `${id}.json`;
  const changed = f.verdictNow !== f.verdict;
  const status = h("p", { class: "status-line" });
  const serviceKey = head && head.key;
  const replay = replayCommands(f.about, f.checks, f.keyid);
  render(
    r.task_id ? h("p", {}, h("a", { href: `#/tasks/${r.task_id}` }, "← Task")) : null,
    h("h2", {}, "Receipt ", h("span", { class: "digest" }, id)),
    h(
      "section",
      { class: `banner ${f.verdict.toLowerCase()}` },
      h("p", { class: "big" }, "Verdict ", verdictBadge(f.verdict)),
      h(
        "p",
        { class: "as-of" },
        `As of ${shortTime(f.asOf)}: `,
        verdictBadge(f.verdictNow),
        changed ? " — a pending check has reached its deadline since this was signed." : "",
      ),
    ),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Decided"),
      h("dd", {}, shortTime(f.decidedAt)),
      h("dt", {}, "Decided by"),
      h("dd", {}, f.decidedBy.join("; ") || "—"),
      h("dt", {}, "Trusted"),
      h("dd", {}, f.trusted.join(", ") || "nothing"),
      h("dt", {}, "Subject (the judged result)"),
      h("dd", { class: "digest" }, f.subject),
      h("dt", {}, "Criteria digest"),
      h("dd", { class: "digest" }, f.criteriaDigest || "none"),
      h("dt", {}, "Chain position"),
      h("dd", {}, `sequence ${f.sequence} · `, f.previous ? ["after ", h("span", { class: "digest" }, f.previous)] : "first on the log"),
      h("dt", {}, "Receipt id"),
      h("dd", { class: "digest" }, r.digest),
      r.supersedes
        ? [h("dt", {}, "Supersedes"), h("dd", {}, h("a", { href: `#/receipts/${r.supersedes}`, class: "digest supersedes" }, r.supersedes))]
        : f.supersedes
          ? [h("dt", {}, "Supersedes"), h("dd", { class: "digest" }, f.supersedes)]
          : null,
      r.superseded_by
        ? [
            h("dt", {}, "Superseded by"),
            h("dd", {}, h("a", { href: `#/receipts/${r.superseded_by}`, class: "digest superseded-by" }, r.superseded_by), " — a later receipt replaces this one"),
          ]
        : null,
      h("dt", {}, "Signed by key"),
      h("dd", { class: "digest" }, f.keyid),
    ),
    h("h3", {}, "Checks"),
    h(
      "table",
      { class: "checks" },
      h("thead", {}, h("tr", {}, ...["Check", "Authority", "Recorded", "Now", "Counts as", "Reason and evidence"].map((c) => h("th", {}, c)))),
      h(
        "tbody",
        {},
        f.checks.map((c) =>
          h(
            "tr",
            {},
            h("td", {}, c.name),
            h("td", {}, c.authority, c.verifierKey ? [h("br"), h("span", { class: "digest" }, `key ${c.verifierKey}`)] : null),
            h("td", {}, verdictBadge(c.verdict)),
            h("td", {}, verdictBadge(c.now), c.pending ? h("div", { class: "muted" }, `until ${shortTime(c.pending.deadline)}, then ${c.pending.expiresTo}`) : null),
            h("td", {}, verdictBadge(c.countsAs)),
            h("td", {}, c.reason, c.evidence.map((e) => h("div", { class: "digest" }, e))),
          ),
        ),
      ),
    ),
    f.decision ? [h("h3", {}, "Policy decision (signed, not part of the verdict)"), h("dl", { class: "facts" }, decisionRows(f.decision))] : null,
    h("h3", {}, "Verify it yourself"),
    h(
      "p",
      {},
      h(
        "button",
        {
          type: "button",
          class: "download",
          onclick: async () => {
            try {
              const envelope = await api("GET", `/receipts/${encodeURIComponent(id)}/envelope`);
              download(file, JSON.stringify(envelope) + "\n");
              status.textContent = `Saved ${file}.`;
            } catch (err) {
              status.replaceChildren(failure(err));
            }
          },
        },
        `Download the envelope (${file})`,
      ),
    ),
    status,
    h("p", {}, "Then check it offline, against the key you pinned:"),
    command(verifyCommand(file, f.keyid), "Verify command"),
    h(
      "p",
      {},
      "Fingerprint to pin: ",
      h("code", { class: "digest fingerprint" }, f.keyid),
      ". Pin it from a channel this service does not control (the operator's own announcement): a key read from this page proves only that this service signed it.",
    ),
    serviceKey && serviceKey !== f.keyid
      ? h("p", { class: "error" }, `This service now signs with key ${serviceKey}; this receipt was signed with an earlier key.`)
      : null,
    replay
      ? [
          h("h3", {}, "Replay it offline"),
          h(
            "p",
            {},
            "A replay bundle holds the receipt and every input it was derived from (for the parties and admins); `adjudge replay` runs the check again with no service and prints the same verdict byte for byte, or each difference and its cause:",
          ),
          command(replay[0], "Bundle command"),
          command(replay[1], "Replay command"),
        ]
      : null,
  );
}

async function receiptLog(after) {
  const render = claim();
  const head = await api("GET", "/receipts/head");
  const summary = h(
    "dl",
    { class: "facts" },
    h("dt", {}, "Receipts"),
    h("dd", {}, String(head.count)),
    h("dt", {}, "Last"),
    h("dd", { class: "digest" }, head.digest ? `sequence ${head.sequence} · ${head.digest}` : "none yet"),
    h("dt", {}, "Signing key"),
    h("dd", { class: "digest" }, head.key || "unknown"),
  );
  if (!me || !me.roles.includes("admin")) {
    render(
      h("h2", {}, "Receipt log"),
      summary,
      h("p", {}, "The log's pages are for admins (the page, or adjudge receipt export). Each task shows its own receipts."),
    );
    return;
  }
  const query = after == null ? "" : `&after=${after}`;
  const page = await api("GET", `/receipts?limit=50${query}`);
  const status = h("p", { class: "status-line" });
  render(
    h("h2", {}, "Receipt log"),
    summary,
    h(
      "table",
      { class: "log" },
      h("thead", {}, h("tr", {}, ...["Sequence", "Verdict", "Task", "Time", "Receipt id"].map((c) => h("th", {}, c)))),
      h(
        "tbody",
        {},
        page.receipts.map((r) =>
          h(
            "tr",
            {},
            h("td", { class: "num" }, String(r.sequence)),
            h("td", {}, verdictBadge(r.receipt.verdict || "—")),
            h("td", {}, r.task_id ? h("a", { href: `#/tasks/${r.task_id}` }, r.task_id) : "call"),
            h("td", {}, shortTime(r.at)),
            h("td", {}, h("a", { href: `#/receipts/${r.id}`, class: "digest" }, r.digest)),
          ),
        ),
      ),
    ),
    h(
      "p",
      { class: "buttons" },
      after != null ? h("button", { type: "button", onclick: () => receiptLog() }, "First page") : null,
      page.next_after != null ? h("button", { type: "button", onclick: () => receiptLog(page.next_after) }, "Next page") : null,
      h(
        "button",
        {
          type: "button",
          class: "download",
          onclick: async () => {
            status.textContent = "…";
            try {
              const lines = [];
              let from = null;
              for (;;) {
                const q = from == null ? "" : `&after=${from}`;
                const part = await api("GET", `/receipts?limit=1000${q}`);
                for (const r of part.receipts) if (r.receipt.envelope) lines.push(JSON.stringify(r.receipt.envelope));
                if (part.next_after == null) break;
                from = part.next_after;
              }
              download("receipts.jsonl", lines.map((l) => l + "\n").join(""), "application/x-ndjson");
              status.textContent = `Saved receipts.jsonl (${lines.length} receipts).`;
            } catch (err) {
              status.replaceChildren(failure(err));
            }
          },
        },
        "Download the whole log (receipts.jsonl)",
      ),
    ),
    status,
    h("p", {}, "Check the whole log offline, against the key and head you pinned:"),
    command(chainCommand("receipts.jsonl", head.key, head.digest), "Verify chain command"),
  );
}

// --- tools ------------------------------------------------------------------------------------

// The version that would judge a call starting now (judged_by), which a caller agrees to by
// paying; a tool that names no version is judged by its policy's highest.
function policyText(policy, judged) {
  if (!policy) return "none: its calls settle unverified";
  if (judged) return `${judged.id} version ${judged.version}${policy.version == null ? " (its highest)" : ""}`;
  return policy.version == null ? `${policy.id} (its highest version)` : `${policy.id} version ${policy.version}`;
}

async function toolList(query, cursor) {
  const render = claim();
  const page = await api("GET", withQuery("/tools", { query: query.query, limit: 50, cursor }));
  const search = h("input", { type: "search", name: "query", value: query.query || "", "aria-label": "Search tools", placeholder: "name or description" });
  render(
    h("h2", {}, "Tools"),
    h(
      "form",
      {
        class: "filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["tools"], { query: search.value });
        },
      },
      search,
      h("button", { type: "submit" }, "Search"),
    ),
    page.tools.length
      ? table(
          "tools",
          ["Tool", "Description", "Provider", "Price", "Policy"],
          page.tools.map((t) => [
            h("a", { href: hashOf(["tools", t.name]) }, t.name),
            t.description,
            providerLink(t.provider),
            h("td", { class: "num" }, price(t.price)),
            policyText(t.policy, t.judged_by),
          ]),
        )
      : h(
          "p",
          {},
          page.next_cursor
            ? "None of the tools this page read matches; later ones may."
            : query.query
              ? "No tool matches."
              : "No tools are registered yet.",
        ),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => toolList(query, page.next_cursor) }, "More tools"))
      : null,
  );
}

async function toolDetail(name) {
  const render = claim();
  const t = await api("GET", `/tools/${encodeURIComponent(name)}`);
  const endpoint = t.endpoint || {};
  const contract = t.contract || {};
  const placements = Object.entries(endpoint.arguments || {});
  const mapping = Object.entries(contract.response_mapping || {});
  const output = contract.output_schema ?? (t.definition && t.definition.outputSchema);
  render(
    h("p", {}, h("a", { href: "#/tools" }, "← Tools")),
    h("h2", {}, t.name),
    t.description ? h("p", {}, t.description) : null,
    factList([
      ["Provider", providerLink(t.provider)],
      ["Price per call", price(t.price)],
      ["Announced price", t.pending_price ? `${price(t.pending_price)} from ${shortTime(t.pending_price.from)}` : null],
      ["Decision policy", policyText(t.policy, t.judged_by)],
      [
        "Judged by",
        t.judged_by
          ? `${t.judged_by.id} version ${t.judged_by.version} (${words(t.judged_by.mode)}${t.judged_by.acts_as ? `, acting as ${words(t.judged_by.acts_as)}: registered by ${t.judged_by.registered_by}, not its provider, so it refunds and strikes nothing` : ""}); bad results reportable for ${t.judged_by.report_window_hours} h`
          : null,
      ],
      [
        "Meaning judged by",
        t.judged_by && t.judged_by.judges
          ? `${t.judged_by.judges.keys.join(", ")} (${t.judged_by.judges.quorum} of ${t.judged_by.judges.keys.length + (t.judged_by.judges.not_asked || []).length} must cite a conflict); sample rate ${t.judged_by.judges.sample_rate}, ${t.judged_by.judges.when}${(t.judged_by.judges.not_asked || []).length ? `; never asked (named by a policy its provider did not register): ${t.judged_by.judges.not_asked.join(", ")}` : ""}`
          : null,
      ],
      [
        "Empty answers corroborated by",
        t.judged_by && t.judged_by.corroboration
          ? `${t.judged_by.corroboration.tool}, paid by the ${t.judged_by.corroboration.paid_by} (at most ${price(t.judged_by.corroboration.max_price)} each); you pay ${price(t.judged_by.corroboration.caller_pays)} for it`
          : null,
      ],
      ["A refunded call", t.refunded_output === "return" ? "still returns the output" : "returns its checks, not the output"],
      ["Version", String(t.version)],
      ["Registered", shortTime(t.registered_at)],
      ["Digest", h("span", { class: "digest" }, t.digest)],
    ]),
    h(
      "p",
      { class: "buttons" },
      h("a", { href: hashOf(["calls"], { tool: t.name }), class: "tool-calls" }, "This tool's calls"),
      " · ",
      h("a", { href: hashOf(["providers", t.provider, "quality"]) }, `${t.provider}'s quality`),
    ),
    h("h3", {}, "Endpoint"),
    h("p", {}, h("code", { class: "endpoint" }, `${endpoint.method || ""} ${endpoint.base_url || ""}${endpoint.path || ""}`)),
    factList([
      ["Method", endpoint.method],
      ["Base URL", endpoint.base_url ?? "shown to the tool's provider only"],
      ["Path", endpoint.path],
      ["Body", endpoint.body == null ? null : typeof endpoint.body === "string" ? endpoint.body : `the argument ${endpoint.body.argument}`],
    ]),
    placements.length
      ? table(
          "placements",
          ["Argument", "Sent in", "As"],
          placements.map(([arg, p]) => [arg, p.in, p.name]),
        )
      : null,
    h("h3", {}, "Input schema"),
    jsonBlock(t.input_schema ?? (t.definition && t.definition.inputSchema) ?? {}, "Input schema"),
    h("h3", {}, `Contract${contract.version ? ` version ${contract.version}` : ""}`),
    mapping.length
      ? [
          h("p", {}, "How the provider's response becomes the output the checks judge:"),
          table("mapping", ["Output field", "From the response"], mapping.map(([field, from]) => [field, h("code", {}, typeof from === "string" ? from : JSON.stringify(from))])),
        ]
      : h("p", {}, "The provider's response is judged as it is (no mapping)."),
    h("h3", {}, "Output schema"),
    output == null ? h("p", {}, "None declared.") : jsonBlock(output, "Output schema"),
  );
}

// --- forwarded calls --------------------------------------------------------------------------

const CALL_VERDICTS = ["PASS", "FAIL", "EMPTY_CONFIRMED", "EMPTY_UNVERIFIED", "MISAPPLIED", "DEGRADED", "SKIPPED", "UNVERIFIED"];

async function callList(query, cursor) {
  const render = claim();
  const page = await api(
    "GET",
    withQuery("/gateway/calls", { tool: query.tool, provider: query.provider, verdict: query.verdict, since: query.since, until: query.until, limit: 50, cursor }),
  );
  const tool = h("input", { type: "text", name: "tool", value: query.tool || "", "aria-label": "Tool", placeholder: "tool" });
  const provider = h("input", { type: "text", name: "provider", value: query.provider || "", "aria-label": "Provider", placeholder: "provider" });
  const verdict = h(
    "select",
    { name: "verdict", "aria-label": "Verdict" },
    h("option", { value: "" }, "any verdict"),
    CALL_VERDICTS.map((v) => h("option", { value: v, selected: v === query.verdict }, words(v))),
  );
  const since = h("input", { type: "date", name: "since", value: query.since || "", "aria-label": "Started from (UTC day)" });
  const until = h("input", { type: "date", name: "until", value: query.until || "", "aria-label": "Started through (UTC day)" });
  const filtered = query.tool || query.provider || query.verdict || query.since || query.until;
  render(
    h("h2", {}, "Calls"),
    h(
      "form",
      {
        class: "filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["calls"], { tool: tool.value, provider: provider.value, verdict: verdict.value, since: since.value, until: until.value });
        },
      },
      tool,
      provider,
      verdict,
      labelled("From", since),
      labelled("Through", until),
      h("button", { type: "submit" }, "Filter"),
      filtered ? h("a", { href: "#/calls" }, "Clear") : null,
    ),
    page.calls.length
      ? table(
          "calls",
          ["Time", "Tool", "Provider", "Caller", "Status", "Verdict", "Money now"],
          page.calls.map((c) => [
            h("a", { href: hashOf(["calls", c.id]) }, shortTime(c.started_at)),
            h("a", { href: hashOf(["tools", c.tool]) }, c.tool),
            providerLink(c.provider),
            c.caller,
            c.status ? statusBadge(c.status) : statusBadge(c.state),
            verdictBadge(c.verdict),
            h("td", { class: "num" }, moneyState(c.money)),
          ]),
        )
      : h("p", {}, page.next_cursor ? "None of the calls this page read matches; older ones may." : filtered ? "No call matches these filters." : "No calls yet."),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => callList(query, page.next_cursor) }, "Older calls"))
      : null,
  );
}

function checkTable(checks) {
  return table(
    "checks call-checks",
    ["Check", "Stage", "Authority", "Outcome", "Weight", "Detail"],
    checks.map((c) => [
      c.name,
      words(c.stage),
      c.authority,
      verdictBadge(c.outcome),
      h("td", { class: "num" }, c.weight == null ? "" : String(c.weight)),
      [
        c.reason,
        c.path ? h("div", { class: "digest" }, `at ${c.path}`) : null,
        c.declared === false ? h("div", { class: "muted" }, "recorded for the reader; the policy does not count it") : null,
        (c.cited || []).map((q) => h("div", { class: "digest" }, `cited ${q}`)),
      ],
    ]),
  );
}

function reportSection(report, currency) {
  return h(
    "section",
    { class: `report ${report.status}` },
    h("h4", {}, `Reported by ${report.filed_by} · ${shortTime(report.filed_at)} · `, statusBadge(report.status)),
    h("pre", { class: "text" }, report.reason),
    report.ruled_by
      ? [
          h("p", {}, `Ruled ${words(report.status)} by ${report.ruled_by} · ${shortTime(report.ruled_at)}`),
          report.ruling && report.ruling.length ? h("ul", {}, report.ruling.map((r) => h("li", {}, r))) : null,
          report.refunded_minor != null
            ? h("p", {}, "Given back to the caller: ", h("strong", { class: "refunded" }, price({ ...currency, amount: String(report.refunded_minor) })))
            : null,
          report.receipt_id ? h("p", {}, "Ruling receipt ", h("a", { href: `#/receipts/${report.receipt_id}` }, report.receipt_id)) : null,
        ]
      : h("p", { class: "muted" }, "Open: an admin who is neither party reviews it. It refunds nothing and strikes nothing by itself."),
  );
}

/** The caller's report form, or an admin's ruling form; each runs and shows the call again. */
function callActionForm(call, action, label) {
  const status = h("p", { class: "status-line" });
  let fields;
  let body;
  if (action === "report") {
    const reason = h("textarea", { rows: 3, required: true, maxlength: 2000, "aria-label": "What is wrong with the result", placeholder: "What is wrong with the result, despite the checks" });
    fields = [
      h("p", { class: "muted" }, `Until ${shortTime(call.report_deadline)}. An admin reviews the report; upheld, the charge comes back.`),
      reason,
    ];
    body = () => ({ reason: reason.value });
  } else {
    const upheld = h(
      "select",
      { "aria-label": "Ruling on the report" },
      h("option", { value: "upheld" }, "Uphold: a human FAIL, the charge goes back to the caller"),
      h("option", { value: "dismissed" }, "Dismiss: nothing changes"),
    );
    const reasons = h("textarea", { rows: 3, required: true, "aria-label": "Reasons for the ruling", placeholder: "Reasons, one per line (1 to 20)" });
    fields = [upheld, reasons];
    body = () => ({ upheld: upheld.value === "upheld", reasons: reasonLines(reasons.value) });
  }
  const path = `/calls/${encodeURIComponent(call.id)}/${action === "report" ? "report" : "report/ruling"}`;
  const button = h("button", { type: "submit" }, label);
  const send = sending(() => [button], status);
  return h(
    "form",
    {
      class: `action call-${action}`,
      onsubmit: async (event) => {
        event.preventDefault();
        const sent = body();
        await send([path, sent], async (idem) => {
          await api("POST", path, sent, idem);
          await signIn(); // an upheld report moved money
          await callDetail(call.id);
        });
      },
    },
    h("h4", {}, label),
    fields,
    button,
    status,
  );
}

// A call whose meaning judges are asked after the answer: "pending" until the upkeep judges
// it, then the final outcome and the receipt that superseded the call's first (null: none).
function meaningState(m) {
  if (!m) return null;
  if (m.state === "pending") return h("span", { class: "meaning-state" }, "meaning: pending (judged after the answer)");
  return h("span", { class: "meaning-state" }, [
    `meaning: ${words(m.outcome || "")} · judged ${shortTime(m.judged_at)} · `,
    h("a", { href: `#/receipts/${m.receipt_id}`, class: "receipt-link" }, m.receipt_id),
  ]);
}

async function callDetail(id) {
  const render = claim();
  const c = await api("GET", `/gateway/calls/${encodeURIComponent(id)}`);
  const a = c.answer;
  const record = c.record;
  const checks = (record && record.checks) || (a && a.checks) || [];
  const error = (a && a.error) || (record && record.error);
  const policy = record && record.policy;
  const reportable = c.report
    ? `reported: ${words(c.report.status)} (below)`
    : c.report_deadline
    ? `until ${shortTime(c.report_deadline)}`
    : c.state === "done"
      ? "not reportable: nothing was charged for its result"
      : null;
  const offered = callActionsFor(c, me);
  render(
    h("p", {}, h("a", { href: "#/calls" }, "← Calls")),
    h("h2", {}, `Call to ${c.tool}`),
    h("p", { class: "digest" }, c.id),
    factList([
      ["Status", c.status ? statusBadge(c.status) : [statusBadge(c.state), " (not ended yet)"]],
      [
        "Verdict",
        [
          verdictBadge(c.verdict),
          c.report && c.report.status === "upheld" ? " · superseded by an upheld report: a human FAIL, the charge given back" : "",
        ],
      ],
      ["Payment decision", a ? [words(a.payment), a.strike ? " · a strike against the provider" : " · no strike"] : null],
      ["Decided by", a ? a.decidedBy : null],
      ["Policy", policy ? `${policy.policy} version ${policy.version} (${words(policy.mode)})` : a ? "none" : null],
      ["Tool", h("a", { href: hashOf(["tools", c.tool]) }, c.tool)],
      ["Provider", [providerLink(c.provider), " · ", h("a", { href: hashOf(["providers", c.provider, "quality"]) }, "its quality")]],
      ["Caller", c.caller],
      ["Listed price", price(c.price)],
      ["Charged at the call", a ? h("span", { class: "charged" }, price(a.chargedPrice)) : null],
      ["Money now", h("span", { class: "money-now" }, moneyState(c.money))],
      ["Started", shortTime(c.started_at)],
      ["Finished", c.finished_at ? shortTime(c.finished_at) : null],
      ["Receipt", c.receipt_id ? h("a", { href: `#/receipts/${c.receipt_id}`, class: "receipt-link" }, c.receipt_id) : null],
      ["Meaning", meaningState(c.meaning)],
      ["Report a bad result", reportable],
    ]),
    error
      ? h(
          "section",
          { class: "call-error", role: "note" },
          h("h3", {}, `Request error: ${words(error.kind)}`),
          h("p", {}, h("code", {}, error.code), ` ${error.message}`),
          h("p", { class: "muted" }, "No verdict: the reservation went back to the caller."),
        )
      : null,
    h("h3", {}, "Checks"),
    checks.length ? checkTable(checks) : h("p", {}, "No check ran."),
    h("h3", {}, "Output (mapped)"),
    a && a.output != null ? jsonBlock(a.output, "Output") : h("p", {}, "No output: the response did not have the tool's shape, or the call failed."),
    c.report ? [h("h3", {}, "Report"), reportSection(c.report, c.price)] : null,
    offered.map(([action, label]) => callActionForm(c, action, label)),
  );
}

async function reportQueue(query, cursor) {
  const render = claim();
  if (!me || !me.roles.includes("admin")) {
    render(h("h2", {}, "Review queue"), h("p", {}, "The review queue of reported calls is for admins. A call's own page shows its report."));
    return;
  }
  const page = await api("GET", withQuery("/call-reports", { status: query.status, limit: 50, cursor }));
  const status = h(
    "select",
    { name: "status", "aria-label": "Report status" },
    h("option", { value: "" }, "every status"),
    ["open", "upheld", "dismissed"].map((s) => h("option", { value: s, selected: s === query.status }, s)),
  );
  render(
    h("h2", {}, "Review queue"),
    h("p", { class: "muted" }, "Reports of bad results, oldest first. Open one to rule on it."),
    h(
      "form",
      {
        class: "filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["reports"], { status: status.value });
        },
      },
      status,
      h("button", { type: "submit" }, "Show"),
    ),
    page.reports.length
      ? table(
          "reports",
          ["Call", "Provider", "Filed by", "Filed", "Reason", "Status", "Ruled by"],
          page.reports.map((r) => [
            h("a", { href: hashOf(["calls", r.call_id]), class: "digest" }, r.call_id),
            providerLink(r.provider),
            r.filed_by,
            shortTime(r.filed_at),
            h("td", { class: "reason" }, r.reason),
            statusBadge(r.status),
            r.ruled_by || "",
          ]),
        )
      : h("p", {}, query.status ? `No ${query.status} reports.` : "No reports."),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => reportQueue(query, page.next_cursor) }, "More reports"))
      : null,
  );
}

async function providerQuality(provider, query) {
  const render = claim();
  const q = await api("GET", withQuery(`/providers/${encodeURIComponent(provider)}/quality`, { window_days: query.window_days }));
  const w = q.window;
  const terms = q.terms;
  const p = q.proposal;
  const days = h("input", { type: "number", min: 1, max: 3650, name: "window_days", value: query.window_days || "", "aria-label": "Window in days", placeholder: "days" });
  render(
    h("h2", {}, `Quality of ${q.provider}`),
    h("p", { class: "muted" }, `As of ${shortTime(q.at)}. Only calls this gateway forwarded count; reported calls never do.`),
    h(
      "form",
      {
        class: "filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["providers", provider, "quality"], { window_days: days.value });
        },
      },
      labelled("Another window (days)", days),
      h("button", { type: "submit" }, "Show"),
    ),
    factList([
      ["Window", `${shortTime(w.start)} to ${shortTime(w.end)}`],
      ["Failure rate", h("strong", { class: "failure-rate" }, failureRate(q.failure_rate))],
    ]),
    table(
      "quality-counts",
      ["Passed", "Failed", "Not counted", "Request errors", "System errors", "Upheld reports"],
      [[w.pass, w.fail, w.not_counted, w.request_errors, w.system_errors, q.upheld_reports].map((n) => h("td", { class: "num" }, String(n)))],
    ),
    h("p", { class: "muted" }, "Upheld reports are human findings, counted apart: they never strike and never change the rate."),
    h("h3", {}, "Declared terms"),
    terms
      ? factList(Object.keys(terms).sort().map((k) => [words(k), k === "penalty_minor" ? money(terms[k]) : String(terms[k])]))
      : h("p", {}, "This provider declared no quality terms: there is nothing to assess a penalty under."),
    q.assessment ? [h("h3", {}, "Assessment under those terms"), h("p", { class: "assessment" }, q.assessment)] : null,
    h("h3", {}, "Latest penalty proposal"),
    p
      ? factList([
          ["Status", statusBadge(p.status)],
          ["Proposed", shortTime(p.proposed_at)],
          ["Enforceable from", shortTime(p.enforceable_at)],
          ["Lapses", shortTime(p.lapses_at)],
          ["Observed", `${p.failures} failed of ${p.observations}`],
          ["Declared failure rate", String(p.declared_failure_rate)],
          ["p-value at most", String(p.p_value_at_most)],
          ["Confidence", String(p.confidence)],
          ["Penalty", money(p.penalty_minor)],
        ])
      : h("p", {}, "None."),
    h("p", {}, h("a", { href: hashOf(["calls"], { provider }) }, `${q.provider}'s calls`)),
  );
}

// --- webhooks ---------------------------------------------------------------------------------

const DELIVERY_STATUSES = ["pending", "delivered", "failed"];

/** The signed-in account's endpoints and delivery log; `notice` (a node) shows above them —
 * a new endpoint's secret, which no later read returns. The enabled endpoints come whole, the
 * deleted ones a page of the newest (`goneCursor` the next). */
async function webhooksPage(query, notice, cursor, goneCursor) {
  const render = claim();
  const [live, gone, page] = await Promise.all([
    api("GET", "/webhooks/endpoints"),
    api("GET", withQuery("/webhooks/endpoints", { disabled: "true", limit: 20, cursor: goneCursor })),
    api("GET", withQuery("/webhooks/deliveries", { endpoint: query.endpoint, status: query.status, limit: 50, cursor })),
  ]);
  const endpoints = [...live.endpoints, ...gone.endpoints];
  const again = (shown) => webhooksPage(query, shown);
  const url = h("input", { type: "text", required: true, name: "url", "aria-label": "Endpoint URL", placeholder: "https://example.com/hooks/adjudge" });
  const types = h("input", { type: "text", name: "event_types", "aria-label": "Event types", placeholder: "all, or e.g. call.settled, call.report_ruled" });
  const description = h("input", { type: "text", name: "description", maxlength: 200, "aria-label": "Description" });
  const made = h("p", { class: "status-line" });
  const add = h("button", { type: "submit" }, "Add endpoint");
  const sendEndpoint = sending(() => [add], made, "add-endpoint");
  const endpointFilter = h(
    "select",
    { name: "endpoint", "aria-label": "Endpoint filter" },
    h("option", { value: "" }, "every endpoint"),
    endpoints.map((e) => h("option", { value: e.id, selected: e.id === query.endpoint }, e.url)),
  );
  const statusFilter = h(
    "select",
    { name: "status", "aria-label": "Delivery status" },
    h("option", { value: "" }, "every status"),
    DELIVERY_STATUSES.map((s) => h("option", { value: s, selected: s === query.status }, s)),
  );
  const urls = new Map(endpoints.map((e) => [e.id, e.url]));
  const rowButton = (label, run) => {
    const line = h("span", { class: "status-line" });
    const button = h("button", { type: "button", onclick: () => send(label, async (idem) => again(await run(idem))) }, label);
    const send = sending(() => [button], line);
    return [button, line];
  };
  render(
    h("h2", {}, "Webhooks"),
    notice || null,
    h("h3", {}, "Your endpoints"),
    endpoints.length
      ? table(
          "endpoints",
          ["URL", "Events", "Description", "State", "Created", ""],
          endpoints.map((e) => [
            h("span", { class: "digest" }, e.url),
            e.event_types ? e.event_types.join(", ") : "all",
            e.description,
            statusBadge(e.enabled ? "enabled" : "disabled"),
            shortTime(e.created_at),
            e.enabled
              ? h(
                  "div",
                  { class: "buttons" },
                  rowButton("Send a test event", async (idem) => {
                    const d = await api("POST", `/webhooks/endpoints/${encodeURIComponent(e.id)}/test`, undefined, idem);
                    return h("p", { class: "notice", role: "status" }, `A test event is queued for ${e.url} (delivery ${d.id}).`);
                  }),
                  rowButton("Disable", async (idem) => {
                    await api("DELETE", `/webhooks/endpoints/${encodeURIComponent(e.id)}`, undefined, idem);
                    return h("p", { class: "notice", role: "status" }, `${e.url} is disabled: nothing more is sent to it.`);
                  }),
                )
              : "",
          ]),
        )
      : h("p", {}, "No endpoints yet."),
    gone.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => webhooksPage(query, null, cursor, gone.next_cursor) }, "Older deleted endpoints"))
      : null,
    h(
      "form",
      {
        class: "post endpoint-form",
        onsubmit: async (event) => {
          event.preventDefault();
          const body = { url: url.value.trim(), event_types: eventTypes(types.value), description: description.value };
          await sendEndpoint(body, async (idem) => {
            const e = await api("POST", "/webhooks/endpoints", body, idem);
            await again(
              h(
                "section",
                { class: "secret", role: "status" },
                h("p", {}, h("strong", {}, `Endpoint ${e.url} added.`), " Its signing secret is shown only this once — store it now; no page or request shows it again. Your receiver checks every delivery's signature with it."),
                command(e.secret, "Signing secret"),
              ),
            );
          });
        },
      },
      h("h4", {}, "Add an endpoint"),
      labelled("URL", url),
      labelled("Event types (blank for all)", types),
      labelled("Description", description),
      add,
      made,
    ),
    h("h3", {}, "Delivery log"),
    h(
      "form",
      {
        class: "filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["webhooks"], { endpoint: endpointFilter.value, status: statusFilter.value });
        },
      },
      endpointFilter,
      statusFilter,
      h("button", { type: "submit" }, "Filter"),
    ),
    page.deliveries.length
      ? table(
          "deliveries",
          ["Created", "Event", "Endpoint", "Status", "Attempts", "Last answer", "Last error", "Next attempt", "Replays", ""],
          page.deliveries.map((d) => [
            h("a", { href: hashOf(["webhooks", "deliveries", d.id]), class: "delivery-link" }, shortTime(d.created_at)),
            h("code", {}, d.type),
            h("span", { class: "digest" }, urls.get(d.endpoint_id) || d.endpoint_id),
            statusBadge(d.status),
            h("td", { class: "num" }, `${d.attempts} of ${d.max_attempts}`),
            d.last_status == null ? "" : String(d.last_status),
            h("td", { class: "reason" }, d.last_error || ""),
            d.next_attempt_at ? shortTime(d.next_attempt_at) : d.delivered_at ? `delivered ${shortTime(d.delivered_at)}` : "",
            h("td", { class: "num" }, String(d.replays)),
            h(
              "div",
              { class: "buttons" },
              rowButton("Replay", async (idem) => {
                await api("POST", `/webhooks/deliveries/${encodeURIComponent(d.id)}/replay`, undefined, idem);
                return h("p", { class: "notice", role: "status" }, `Delivery ${d.id} is sent again now, under the same webhook-id.`);
              }),
            ),
          ]),
        )
      : h("p", {}, page.next_cursor ? "None of the deliveries this page read matches; older ones may." : "No deliveries."),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => webhooksPage(query, null, page.next_cursor) }, "Older deliveries"))
      : null,
  );
}

/** One delivery: the event it carries (the payload, as sent) and every attempt with the
 * receiver's status and what went wrong. */
async function deliveryDetail(id) {
  const render = claim();
  const d = await api("GET", `/webhooks/deliveries/${encodeURIComponent(id)}`);
  const history = d.attempt_history || [];
  render(
    h("p", {}, h("a", { href: "#/webhooks" }, "← Webhooks")),
    h("h2", {}, "Delivery ", h("span", { class: "digest" }, d.id)),
    factList([
      ["Event", h("code", {}, d.type)],
      ["Status", statusBadge(d.status)],
      ["Attempts", `${d.attempts} of ${d.max_attempts}`],
      ["Next attempt", d.next_attempt_at ? shortTime(d.next_attempt_at) : null],
      ["Delivered", d.delivered_at ? shortTime(d.delivered_at) : null],
      ["Replays", String(d.replays)],
      ["Created", shortTime(d.created_at)],
      ["webhook-id", h("span", { class: "digest" }, d.message_id)],
    ]),
    h("h3", {}, "Attempts"),
    history.length
      ? table(
          "attempts",
          ["Attempt", "Time", "Outcome", "Status", "Receiver's answer or error"],
          history.map((a) => [
            h("td", { class: "num" }, String(a.attempt)),
            shortTime(a.at),
            statusBadge(a.ok ? "delivered" : "failed"),
            a.status == null ? "no answer" : String(a.status),
            h("td", { class: "reason" }, a.error || ""),
          ]),
        )
      : h("p", {}, d.attempts ? "Its attempts were made before attempts were kept; the last is above." : "Not attempted yet."),
    h("h3", {}, "Payload (as sent)"),
    jsonBlock(d.payload, "Payload"),
  );
}

// --- the ledger -------------------------------------------------------------------------------

/** The filters the ledger page keeps in its URL. */
const LEDGER_FILTERS = ["account", "kind", "since", "until"];

/** A signed amount as people read it: "+2 USDC", "-0.5 USDC". */
function signedMoney(minor) {
  const text = String(minor);
  return text.startsWith("-") ? money(text) : `+${money(text)}`;
}

/** Every movement of money the signed-in account may see (an admin's every account), newest
 * first, with its other side and the receipt that released it; filters in the URL, the
 * filter's totals, and the whole filtered ledger as CSV. */
async function ledgerPage(query, cursor) {
  const render = claim();
  const filters = Object.fromEntries(LEDGER_FILTERS.map((k) => [k, query[k]]));
  const page = await api("GET", withQuery("/ledger/lines", { ...filters, limit: 50, cursor, totals: cursor ? "" : "true" }));
  const admin = page.accounts == null;
  const account = admin
    ? h("input", { type: "text", name: "account", value: query.account || "", "aria-label": "Account", placeholder: "account, e.g. wallet:pat" })
    : h(
        "select",
        { name: "account", "aria-label": "Account" },
        h("option", { value: "" }, "all of yours"),
        page.accounts.map((a) => h("option", { value: a, selected: a === query.account }, a)),
      );
  const kind = h(
    "select",
    { name: "kind", "aria-label": "Kind" },
    h("option", { value: "" }, "every kind"),
    LEDGER_KINDS.map((k) => h("option", { value: k, selected: k === query.kind }, k)),
  );
  const since = h("input", { type: "date", name: "since", value: query.since || "", "aria-label": "From (UTC day)" });
  const until = h("input", { type: "date", name: "until", value: query.until || "", "aria-label": "Through (UTC day)" });
  const status = h("p", { class: "status-line", role: "status" });
  const filtered = LEDGER_FILTERS.some((k) => query[k]);
  const t = page.totals;
  const link = (line) => {
    const other = line.counterpart || "";
    const task = /^escrow:(.+)$/.exec(other);
    const call = /^hold:call:(.+)$/.exec(other);
    if (task) return h("a", { href: hashOf(["tasks", task[1]]) }, other);
    if (call) return h("a", { href: hashOf(["calls", call[1]]) }, other);
    return other;
  };
  const exportCsv = async () => {
    status.textContent = "…";
    try {
      const rows = [LEDGER_CSV_HEADER];
      let next = null;
      do {
        const part = await api("GET", withQuery("/ledger/lines", { ...filters, limit: 500, cursor: next }));
        rows.push(...part.lines.map(ledgerRow));
        next = part.next_cursor;
      } while (next);
      download("ledger.csv", csv(rows), "text/csv");
      status.textContent = `Saved ledger.csv (${rows.length - 1} lines).`;
    } catch (err) {
      status.replaceChildren(failure(err));
    }
  };
  render(
    h("h2", {}, "Ledger"),
    h(
      "p",
      { class: "muted" },
      admin
        ? "Every movement of money, newest first: each transfer is two lines (out of one account, into another). Money leaves a task's escrow or a call's hold only against a signed receipt, linked on its line."
        : `Your accounts' movements, newest first: ${page.accounts.join(" and ")}. Money released to you from an escrow or a hold names the signed receipt that released it.`,
    ),
    h(
      "form",
      {
        class: "filters ledger-filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["ledger"], { account: account.value, kind: kind.value, since: since.value, until: until.value });
        },
      },
      labelled("Account", account),
      labelled("Kind", kind),
      labelled("From", since),
      labelled("Through", until),
      h("button", { type: "submit" }, "Filter"),
      filtered ? h("a", { href: "#/ledger" }, "Clear") : null,
    ),
    t
      ? h(
          "section",
          { class: "totals", "aria-label": "Totals" },
          factList([
            ["Lines", h("span", { class: "total-lines" }, t.lines)],
            ["Money in", h("span", { class: "total-credits" }, money(t.credits))],
            ["Money out", h("span", { class: "total-debits" }, money(t.debits))],
            ["Net", h("span", { class: "total-net" }, signedMoney(t.net))],
          ]),
          h("p", { class: "muted" }, filtered ? "Totals of every line this filter keeps, not only this page." : "Totals of every line, not only this page: in and out net to zero across the whole ledger."),
        )
      : null,
    h("p", { class: "buttons" }, h("button", { type: "button", class: "download", onclick: exportCsv }, "Download these lines (ledger.csv)")),
    status,
    page.lines.length
      ? table(
          "ledger",
          ["Time", "Account", "Kind", "Amount", "Other side", "Receipt"],
          page.lines.map((line) => [
            shortTime(line.at),
            h("span", { class: "digest" }, line.account),
            line.kind,
            h("td", { class: `num amount ${line.amount.startsWith("-") ? "debit" : "credit"}` }, signedMoney(line.amount)),
            h("td", { class: "digest" }, link(line)),
            line.receipt_id ? h("a", { href: hashOf(["receipts", line.receipt_id]), class: "receipt-link digest" }, line.receipt_id.slice(0, 16) + "…") : h("span", { class: "muted" }, "none needed"),
          ]),
        )
      : h("p", {}, page.next_cursor ? "None of the lines this page read matches; older ones may." : filtered ? "No line matches these filters." : "No money has moved yet."),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => ledgerPage(query, page.next_cursor) }, "Older lines"))
      : null,
  );
}

// --- dashboards -------------------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element: the same as h(), in SVG's namespace. */
function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) if (value != null) el.setAttribute(name, String(value));
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** A USDC amount as a chart's tick reads it ("0.25 USDC"). */
function unitsText(v) {
  return `${Number(v.toFixed(CURRENCY.decimals))} ${CURRENCY.code}`;
}

/** A whole count as a tick reads it. */
function countText(v) {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

/** A share (0..1) as a percentage. */
function shareText(v) {
  return `${Math.round(v * 1000) / 10}%`;
}

/**
 * A chart with its numbers: the SVG (drawn here from chartGeometry; nothing is fetched), a
 * legend, the same numbers as a table, and a button that saves them as CSV. `rows` are the
 * table's cells as text, `headers` their names.
 */
function chartFigure({ id, title, labels, series, refs = [], format = countText, tick, headers, rows, note }) {
  const g = chartGeometry({ labels, series, refs, format, tick });
  const status = h("span", { class: "status-line", role: "status" });
  const drawing = svg(
    "svg",
    { viewBox: `0 0 ${g.width} ${g.height}`, role: "img", "aria-labelledby": `${id}-title`, class: "chart", preserveAspectRatio: "xMinYMin meet" },
    svg("title", { id: `${id}-title` }, `${title} (the numbers are in the table below)`),
    g.yTicks.map((t) => [
      svg("line", { x1: g.left - 4, x2: g.right, y1: t.y, y2: t.y, class: "grid" }),
      svg("text", { x: g.left - 8, y: t.y + 4, class: "tick", "text-anchor": "end" }, t.label),
    ]),
    g.bars.map((b) => svg("rect", { x: b.x, y: b.y, width: b.w, height: Math.max(0.5, b.h), class: `mark s${b.series}` }, svg("title", {}, b.title))),
    g.lines.map((l) =>
      l.points
        ? [
            svg("polyline", { points: l.points, class: `trend s${l.series}` }, svg("title", {}, l.name)),
            // A dot at each point: a day alone between empty days is seen too.
            l.points.split(" ").map((p) => svg("circle", { cx: p.split(",")[0], cy: p.split(",")[1], r: 3, class: `mark s${l.series}` })),
          ]
        : null,
    ),
    g.refs.map((r) => [
      svg("line", { x1: g.left, x2: g.right, y1: r.y, y2: r.y, class: `ref r${r.series}` }, svg("title", {}, r.label)),
      svg("text", { x: g.right - 2, y: r.y - 3, class: "tick ref-label", "text-anchor": "end" }, r.label),
    ]),
    g.xTicks.map((t) => svg("text", { x: t.x, y: g.height - 6, class: "tick", "text-anchor": "middle" }, t.label)),
  );
  const legend = h(
    "ul",
    { class: "legend" },
    series.map((s, k) => h("li", {}, h("span", { class: `swatch s${k}`, "aria-hidden": "true" }), s.name)),
    refs.map((r, k) => h("li", {}, h("span", { class: `swatch ref r${k}`, "aria-hidden": "true" }), r.name)),
  );
  return h(
    "figure",
    { class: "chart-figure", id },
    h("figcaption", {}, h("h3", {}, title)),
    drawing,
    legend,
    note ? h("p", { class: "muted" }, note) : null,
    numbersTable(id, title, headers, rows, status),
  );
}

/** The numbers of a chart or a list, as a table in a disclosure, and as CSV. */
function numbersTable(id, title, headers, rows, status = h("span", { class: "status-line", role: "status" })) {
  return h(
    "div",
    { class: "numbers" },
    h(
      "details",
      {},
      h("summary", {}, `The numbers (${rows.length} rows)`),
      table(`numbers ${id}-numbers`, headers, rows.map((r) => r.map((c) => (typeof c === "number" ? h("td", { class: "num" }, String(c)) : c)))),
    ),
    h(
      "button",
      {
        type: "button",
        class: "download",
        onclick: () => {
          download(`${id}.csv`, csv([headers, ...rows.map((r) => r.map((c) => (c instanceof Node ? c.textContent : c)))]), "text/csv");
          status.textContent = `Saved ${id}.csv.`;
        },
      },
      `Download ${id}.csv`,
    ),
    status,
  );
}

/** The dashboards this account may read, the operator's first. */
function dashboardRoles() {
  const roles = new Set((me && me.roles) || []);
  return [roles.has("admin") ? "operator" : null, roles.has("provider") ? "provider" : null, "poster"].filter(Boolean);
}

async function dashboardPage(query) {
  const render = claim();
  const offered = dashboardRoles();
  const role = offered.includes(query.role) ? query.role : offered[0];
  const days = query.days || "30";
  const board = await api("GET", withQuery(`/dashboard/${role}`, { days }));
  const daysField = h("input", { type: "number", min: 1, max: 90, name: "days", value: days, "aria-label": "Days" });
  const head = [
    h("h2", {}, "Dashboard"),
    offered.length > 1
      ? h(
          "nav",
          { class: "tabs", "aria-label": "Dashboards" },
          offered.map((r) => h("a", { href: hashOf(["dashboard"], { role: r, days: query.days }), "aria-current": r === role ? "page" : null }, words(r))),
        )
      : null,
    h(
      "form",
      {
        class: "filters",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = hashOf(["dashboard"], { role, days: daysField.value });
        },
      },
      labelled("Days", daysField),
      h("button", { type: "submit" }, "Show"),
    ),
    h("p", { class: "muted" }, `The last ${board.days.length} UTC days, to ${shortTime(board.as_of)}. Hover a bar for its value; each chart's numbers are in the table under it.`),
  ];
  if (role === "operator") render(head, operatorBoard(board));
  else if (role === "provider") render(head, providerBoard(board));
  else render(head, posterBoard(board));
}

function callsChart(id, title, calls, days) {
  return chartFigure({
    id,
    title,
    labels: days,
    series: calls.verdicts.map((v) => ({ name: words(v), values: calls.rows.map((r) => r[v] || 0) })),
    headers: ["day", ...calls.verdicts],
    rows: calls.rows.map((r) => [r.day, ...calls.verdicts.map((v) => r[v] || 0)]),
  });
}

function verdictsChart(id, title, tasks, days) {
  return chartFigure({
    id,
    title,
    labels: days,
    series: [
      { name: "passed", values: tasks.map((r) => r.passed) },
      { name: "failed", values: tasks.map((r) => r.failed) },
    ],
    headers: ["day", "passed", "failed"],
    rows: tasks.map((r) => [r.day, r.passed, r.failed]),
  });
}

function operatorBoard(b) {
  const m = b.money;
  const last = m[m.length - 1] || {};
  const flows = [["charged", "charged to callers"], ["refunded", "refunded"], ["paid_out", "paid out"], ["fees", "fees"]];
  const sum = (k) => m.reduce((t, r) => t + BigInt(r[k]), 0n).toString();
  return [
    h(
      "section",
      { class: "headline", "aria-label": "Now" },
      factList([
        ["Held in escrows and calls' holds", h("span", { class: "now-held" }, money(last.held || "0"))],
        ["Held for providers (report windows)", h("span", { class: "now-provider-holds" }, money(last.provider_holds || "0"))],
        ...flows.map(([k, label]) => [`${label[0].toUpperCase()}${label.slice(1)} in these days`, h("span", { class: `sum-${k.replace("_", "-")}` }, money(sum(k)))]),
      ]),
    ),
    chartFigure({
      id: "money-held",
      title: "Money held at each day's end",
      labels: b.days,
      series: [
        { name: "escrows and calls' holds", values: m.map((r) => units(r.held)), kind: "line" },
        { name: "providers' holds", values: m.map((r) => units(r.provider_holds)), kind: "line" },
      ],
      format: unitsText,
      headers: ["day", "held (minor units)", "provider holds (minor units)", `held (${CURRENCY.code})`, `provider holds (${CURRENCY.code})`],
      rows: m.map((r) => [r.day, r.held, r.provider_holds, money(r.held), money(r.provider_holds)]),
    }),
    chartFigure({
      id: "money-moved",
      title: "Money moved each day",
      labels: b.days,
      series: flows.map(([k, label]) => ({ name: label, values: m.map((r) => units(r[k])) })),
      format: unitsText,
      headers: ["day", ...flows.map(([k]) => `${k} (minor units)`)],
      rows: m.map((r) => [r.day, ...flows.map(([k]) => r[k])]),
    }),
    callsChart("calls-by-verdict", "Paid calls each day, by verdict", b.calls, b.days),
    verdictsChart("task-verdicts", "Task verdicts each day", b.tasks, b.days),
    h("h3", {}, "Providers closest to their declared failure rate"),
    b.providers.length
      ? [
          table(
            "providers-near",
            ["Provider", "Observed", "Declared", "Observed ÷ declared", "Calls judged", "Failed"],
            b.providers.map((p) => [
              providerLink(p.provider),
              failureRate(p.failure_rate),
              failureRate(p.declared_failure_rate),
              p.share_of_declared == null ? "—" : shareText(ratioValue(p.share_of_declared)),
              h("td", { class: "num" }, String(p.observations)),
              h("td", { class: "num" }, String(p.failures)),
            ]),
          ),
          numbersTable(
            "providers",
            "Providers",
            ["provider", "failure rate", "declared failure rate", "observed / declared", "observations", "failures"],
            b.providers.map((p) => [p.provider, p.failure_rate || "", p.declared_failure_rate || "", p.share_of_declared || "", p.observations, p.failures]),
          ),
        ]
      : h("p", {}, "No provider has declared quality terms."),
  ];
}

function providerBoard(b) {
  const q = b.quality;
  const t = q.penalty_threshold;
  const rates = b.calls.rows.map((r) => {
    const judged = (r.PASS || 0) + (r.FAIL || 0);
    return judged ? (r.FAIL || 0) / judged : null;
  });
  const refs = [];
  if (q.declared_failure_rate) refs.push({ name: "declared failure rate", value: ratioValue(q.declared_failure_rate) });
  if (t && t.rate) refs.push({ name: "penalty threshold", value: ratioValue(t.rate) });
  const threshold = !t
    ? "No quality terms declared: no penalty can be assessed."
    : t.failures_at_least == null
      ? `With ${t.observations} calls judged, no count of failures would be improbable enough under the declared rate at ${failureRate(q.confidence)} confidence.`
      : `A penalty is proposed at ${t.failures_at_least} failures of the ${t.observations} calls judged (${failureRate(t.rate)})` +
        (t.gate_met ? "." : `, once the sample gate of ${q.sample_gate} is met.`);
  return [
    h(
      "section",
      { class: "headline", "aria-label": "Quality now" },
      factList([
        ["Failure rate in the window", h("strong", { class: "failure-rate" }, failureRate(q.failure_rate))],
        ["Declared failure rate", q.declared_failure_rate ? failureRate(q.declared_failure_rate) : "none declared"],
        ["Penalty threshold", h("span", { class: "threshold" }, threshold)],
        ["Window", `${shortTime(q.window.start)} to ${shortTime(q.window.end)}: ${q.window.pass} passed, ${q.window.fail} failed`],
        ["Assessment", q.assessment],
      ]),
      h("p", {}, h("a", { href: hashOf(["providers", b.provider, "quality"]) }, "The quality page"), " · ", h("a", { href: hashOf(["calls"], { provider: b.provider }) }, "Your calls")),
    ),
    chartFigure({
      id: "failure-rate",
      title: "Failure rate each day against the declared rate",
      labels: b.days,
      series: [{ name: "failure rate that day", values: rates, kind: "line" }],
      refs,
      format: shareText,
      headers: ["day", "passed", "failed", "failure rate"],
      rows: b.calls.rows.map((r, i) => [r.day, r.PASS || 0, r.FAIL || 0, rates[i] == null ? "" : shareText(rates[i])]),
      note: "Only PASS and FAIL count; a day with neither has no point.",
    }),
    callsChart("calls-by-verdict", "Your calls each day, by verdict", b.calls, b.days),
    h("h3", {}, "Checks that failed most"),
    b.failing_checks.length
      ? [
          table("failing-checks", ["Check", "Failures"], b.failing_checks.map((c) => [c.name, h("td", { class: "num" }, String(c.failures))])),
          numbersTable("failing-checks", "Checks that failed most", ["check", "failures"], b.failing_checks.map((c) => [c.name, c.failures])),
        ]
      : h("p", {}, "No check failed in these days."),
  ];
}

function posterBoard(b) {
  const states = Object.keys(b.tasks_by_state);
  return [
    chartFigure({
      id: "tasks-by-state",
      title: "Your tasks by state",
      labels: states,
      series: [{ name: "tasks", values: states.map((s) => b.tasks_by_state[s]) }],
      tick: (s) => words(s).split(" ")[0],
      headers: ["state", "tasks"],
      rows: states.map((s) => [s, b.tasks_by_state[s]]),
    }),
    verdictsChart("task-verdicts", "Verdicts on your tasks each day", b.tasks, b.days),
    h("h3", {}, "Rules that fail most"),
    b.failing_rules.length
      ? [
          table("failing-rules", ["Rule", "Failed verdicts"], b.failing_rules.map((r) => [h("code", {}, r.name), h("td", { class: "num" }, String(r.failures))])),
          numbersTable("failing-rules", "Rules that fail most", ["rule", "failures"], b.failing_rules.map((r) => [r.name, r.failures])),
          h("p", { class: "muted" }, "From the auto check's failed verdicts: each criterion scored below full marks, or the gate that stopped the check. Check criteria before funding on the post form."),
        ]
      : h("p", {}, "No rule failed in these days."),
  ];
}

// --- routing ----------------------------------------------------------------------------------

async function route() {
  const { parts, query } = parseHash(location.hash || "#/tasks");
  const [view, id, more] = parts;
  // The batch viewer reads files in this browser and calls no API: no key needed.
  if (view === "batch") {
    claim()(batchPage());
    return;
  }
  if (!key() || !me) {
    signInPage();
    return;
  }
  keyFormInHeader();
  const before = tickets;
  try {
    if (view === "tasks" && id) await taskDetail(id);
    else if (view === "post") await postForm();
    else if (view === "verifiers") await verifiers();
    else if (view === "receipts" && id) await receipt(id);
    else if (view === "receipts") await receiptLog();
    else if (view === "tools" && id) await toolDetail(id);
    else if (view === "tools") await toolList(query);
    else if (view === "calls" && id) await callDetail(id);
    else if (view === "calls") await callList(query);
    else if (view === "reports") await reportQueue(query);
    else if (view === "providers" && id && more === "quality") await providerQuality(id, query);
    else if (view === "webhooks" && id === "deliveries" && more) await deliveryDetail(more);
    else if (view === "webhooks") await webhooksPage(query);
    else if (view === "ledger") await ledgerPage(query);
    else if (view === "dashboard") await dashboardPage(query);
    else await taskList(query);
  } catch (err) {
    // Shown unless a later view has started since (its own page stands).
    // A 404 here answers the view's own read of the id in the address, which the link's
    // sender wrote: said in the page's words, that text left out.
    if (tickets <= before + 1) show(failure(err.missing ? new Error(err.missing) : err));
  }
}

window.addEventListener("hashchange", route);
await signIn();
await route();
