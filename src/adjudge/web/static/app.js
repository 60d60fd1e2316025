// The web UI: a thin client of the JSON API under /api/v1, with the caller's API key kept in
// this browser tab (sessionStorage). Every text from the service is put on the page as text,
// never as HTML: briefs and results are written by other people. Every call, downloads
// included, is a fetch with the key; the page never navigates to the API.
import {
  CURRENCY,
  actionsFor,
  chainCommand,
  errorText,
  money,
  parseAmount,
  parseCriteria,
  percent,
  reasonLines,
  receiptFacts,
  shortTime,
  verifyCommand,
  words,
} from "./ui.js";

const API = "/api/v1";
const main = document.querySelector("main");
const who = document.querySelector("#who");
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
  main.replaceChildren(h("div", {}, ...nodes));
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

/** A request to the API; state changes carry a fresh Idempotency-Key. Throws the error text. */
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (key()) headers.Authorization = `Bearer ${key()}`;
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers["Idempotency-Key"] = crypto.randomUUID();
  }
  const response = await fetch(API + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new Error(errorText(response.status, data));
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

function statusBadge(status) {
  return h("span", { class: `status ${status}` }, words(status));
}

function verdictBadge(verdict) {
  return h("span", { class: `verdict-word ${String(verdict).toLowerCase()}` }, verdict);
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
  if (!key()) {
    who.append("Not signed in: paste an API key.");
    return;
  }
  try {
    me = await api("GET", "/accounts/me");
    who.append(
      h("strong", {}, me.id),
      ` (${me.roles.join(", ")}) · balance `,
      h("span", { id: "balance" }, money(me.balance)),
      ` · reputation ${me.reputation}`,
    );
  } catch (err) {
    who.append(h("span", { class: "error" }, err.message));
  }
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

async function taskList(cursor) {
  const render = claim();
  const page = await api("GET", "/tasks" + (cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""));
  const tasks = page.tasks;
  const rows = tasks.map((t) =>
    h(
      "tr",
      {},
      h("td", {}, h("a", { href: `#/tasks/${t.id}` }, t.title)),
      h("td", {}, t.mode),
      h("td", {}, statusBadge(t.status)),
      h("td", { class: "num" }, money(t.reward)),
      h("td", {}, shortTime(t.deadline)),
      h("td", {}, t.poster),
      h("td", {}, t.agent || ""),
    ),
  );
  render(
    h("h2", {}, "Tasks"),
    tasks.length
      ? h(
          "table",
          { class: "tasks" },
          h(
            "thead",
            {},
            h("tr", {}, ...["Title", "Mode", "Status", "Reward", "Deadline", "Poster", "Agent"].map((c) => h("th", {}, c))),
          ),
          h("tbody", {}, rows),
        )
      : h("p", {}, "No tasks yet."),
    page.next_cursor
      ? h("p", {}, h("button", { type: "button", onclick: () => taskList(page.next_cursor) }, "Older tasks"))
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

/** Runs a task action and shows the task again (the balance too: money may have moved). */
async function perform(task, path, body, status) {
  status.textContent = "…";
  try {
    await api("POST", `/tasks/${task.id}/${path}`, body);
    await signIn();
    await taskDetail(task.id);
  } catch (err) {
    status.replaceChildren(failure(err));
  }
}

/** One draft, two buttons: a dry run (no attempt used) and the submission. */
function deliverForm(task, offered) {
  const status = h("p", { class: "status-line" });
  const text = h("textarea", { rows: 8, required: true, "aria-label": "Result", name: "result" });
  const buttons = offered.map(([action, label]) =>
    h("button", { type: "submit", value: action, name: "action" }, label),
  );
  return h(
    "form",
    {
      class: "action deliver",
      onsubmit: async (event) => {
        event.preventDefault();
        const action = event.submitter ? event.submitter.value : "submit";
        if (action === "dry-run") {
          status.textContent = "…";
          try {
            const answer = await api("POST", `/tasks/${task.id}/dry-run`, { result: text.value });
            status.replaceChildren(
              h("strong", { class: answer.passed ? "pass-text" : "fail-text" }, `Dry run: ${answer.passed ? "would pass" : "would fail"}, score ${answer.score}.`),
              h("ul", {}, (answer.reasons || []).map((r) => h("li", {}, r))),
              h("p", {}, answer.note || ""),
            );
          } catch (err) {
            status.replaceChildren(failure(err));
          }
          return;
        }
        await perform(task, "submissions", { result: text.value }, status);
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
    body = () => ({ passed: verdict.value === "pass", reasons: reasonLines(reasons.value) });
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
        `adjudge task verdict ${task.id} --verifier-key KEY.pem ` +
          `--quote-brief BRIEF_EXCERPT --quote-result RESULT_EXCERPT`,
        "Verdict command",
      ),
    );
  }
  const path = action === "dispute" ? "disputes" : action;
  return h(
    "form",
    {
      class: "action",
      onsubmit: async (event) => {
        event.preventDefault();
        await perform(task, path, body(), status);
      },
    },
    fields.length ? h("h4", {}, label) : null,
    fields,
    h("button", { type: "submit" }, label),
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
    if (action !== "submit" && action !== "dry-run") out.push(actionForm(task, action, label));
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
    ["Private", t.private ? "yes" : "no"],
  ];
  render(
    h("p", {}, h("a", { href: "#/tasks" }, "← Tasks")),
    h("h2", {}, t.title),
    h("dl", { class: "facts" }, facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    t.brief ? [h("h3", {}, "Brief"), h("pre", { class: "text" }, t.brief)] : null,
    t.criteria && Object.keys(t.criteria).length
      ? [h("h3", {}, "Criteria"), h("pre", {}, JSON.stringify(t.criteria, null, 2))]
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
  const title = h("input", { type: "text", required: true, maxlength: 200, name: "title" });
  const brief = h("textarea", { rows: 4, name: "brief" });
  const reward = h("input", { type: "text", required: true, inputmode: "decimal", name: "reward", placeholder: `2.5 = 2.5 ${CURRENCY.code}` });
  const hours = h("input", { type: "number", min: 1, max: 2160, value: 72, name: "hours" });
  const mode = h("select", { name: "mode" }, ["manual", "auto", "agent"].map((m) => h("option", { value: m }, m)));
  const verifier = h("input", { type: "text", name: "verifier", placeholder: "for agent mode: an opted-in verifier" });
  const priv = h("input", { type: "checkbox", name: "private" });
  const lenient = h("input", { type: "checkbox", name: "lenient" });
  const criteria = h("textarea", { rows: 6, name: "criteria", placeholder: '{"min_length": 200, "contains_keywords": ["escrow"]}' });
  const status = h("p", { class: "status-line" });
  const label = (text, input) => h("label", {}, h("span", {}, text), input);
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
          try {
            const task = await api("POST", "/tasks", {
              title: title.value,
              brief: brief.value,
              reward: amount.minor,
              deadline_hours: Number(hours.value),
              mode: mode.value,
              verifier: verifier.value.trim() || null,
              private: priv.checked,
              criteria: parsed.criteria,
              lenient_criteria: lenient.checked,
            });
            await signIn(); // the reward left the wallet
            location.hash = `#/tasks/${task.id}`;
          } catch (err) {
            status.replaceChildren(failure(err));
          }
        },
      },
      label("Title", title),
      label("Brief", brief),
      label(`Reward (${CURRENCY.code})`, reward),
      label("Deadline (hours from now, 1 to 2160)", hours),
      label("Mode", mode),
      label("Verifier", verifier),
      label("Private", priv),
      label("Criteria (JSON)", criteria),
      label("Keep fields the check does not know", lenient),
      h("button", { type: "submit" }, "Post and fund"),
      status,
    ),
  );
}

async function verifiers() {
  const render = claim();
  const { verifiers: list } = await api("GET", "/verifiers");
  render(
    h("h2", {}, "Verifiers who take agent-mode tasks"),
    list.length
      ? h("ul", {}, list.map((v) => h("li", {}, h("strong", {}, v.id), " · key ", h("span", { class: "digest" }, v.verifier_key || "none"), ` · reputation ${v.reputation}`)))
      : h("p", {}, "No verifier has opted in."),
  );
}

// --- receipts ---------------------------------------------------------------------------------

function decisionRows(decision) {
  const amounts = new Set(["fee", "payout", "refund", "reward", "penalty"]);
  return Object.keys(decision)
    .sort()
    .flatMap((name) => {
      const value = decision[name];
      const shown = amounts.has(name) && /^\d+$/.test(String(value)) ? money(value) : value == null ? "null" : String(value);
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
      f.supersedes ? [h("dt", {}, "Supersedes"), h("dd", { class: "digest" }, f.supersedes)] : null,
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

// --- routing ----------------------------------------------------------------------------------

async function route() {
  const [, view, id] = (location.hash || "#/tasks").split("/");
  if (!key()) {
    claim()(
      h("h2", {}, "Sign in"),
      h("p", {}, "Paste an API key above. `make demo` prints keys for its demo accounts."),
    );
    return;
  }
  const before = tickets;
  try {
    if (view === "tasks" && id) await taskDetail(decodeURIComponent(id));
    else if (view === "post") await postForm();
    else if (view === "verifiers") await verifiers();
    else if (view === "receipts" && id) await receipt(decodeURIComponent(id));
    else if (view === "receipts") await receiptLog();
    else await taskList();
  } catch (err) {
    // Shown unless a later view has started since (its own page stands).
    if (tickets <= before + 1) show(failure(err));
  }
}

window.addEventListener("hashchange", route);
await signIn();
await route();
