// The web UI: a thin client of the JSON API under /api/v1, with the caller's API key kept in
// this browser tab (sessionStorage). Every text from the service is put on the page as text,
// never as HTML: briefs and results are written by other people.
import {
  actionsFor,
  errorText,
  formatAmount,
  parseCriteria,
  percent,
  reasonLines,
  shortTime,
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

function failure(err) {
  return h("p", { class: "error", role: "alert" }, err.message);
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
      ` (${me.roles.join(", ")}) · balance ${formatAmount(me.balance)} · reputation ${me.reputation}`,
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

// --- views ------------------------------------------------------------------------------------

async function taskList(cursor) {
  const page = await api("GET", "/tasks" + (cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""));
  const tasks = page.tasks;
  const rows = tasks.map((t) =>
    h(
      "tr",
      {},
      h("td", {}, h("a", { href: `#/tasks/${t.id}` }, t.title)),
      h("td", {}, t.mode),
      h("td", {}, h("span", { class: `status ${t.status}` }, t.status)),
      h("td", { class: "num" }, formatAmount(t.reward)),
      h("td", {}, shortTime(t.deadline)),
      h("td", {}, t.poster),
      h("td", {}, t.agent || ""),
    ),
  );
  show(
    h("h2", {}, "Tasks"),
    tasks.length
      ? h(
          "table",
          {},
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
      `Attempt ${v.attempt}: ${v.passed ? "passed" : "failed"}`,
      v.score == null ? "" : ` · score ${v.score}`,
      v.authority ? ` · ${v.authority}` : "",
      v.judge ? ` (${v.judge})` : "",
      v.at ? ` · ${shortTime(v.at)}` : "",
    ),
    v.reasons && v.reasons.length ? h("ul", {}, v.reasons.map((r) => h("li", {}, r))) : null,
    breakdown(result),
    v.receipt_id ? h("p", {}, "Receipt ", h("a", { href: `#/receipts/${v.receipt_id}` }, v.receipt_id)) : null,
  );
}

/** The form for one action on a task; runs it and shows the task again. */
function actionForm(task, action, label) {
  const status = h("p", { class: "status-line" });
  const fields = [];
  let body = () => undefined;
  if (action === "submit" || action === "dry-run") {
    const text = h("textarea", { rows: 8, required: true, "aria-label": "Result" });
    fields.push(text);
    body = () => ({ result: text.value });
  } else if (action === "review") {
    const verdict = h(
      "select",
      { "aria-label": "Verdict" },
      h("option", { value: "pass" }, "Approve"),
      h("option", { value: "fail" }, "Reject"),
    );
    const reasons = h("textarea", { rows: 3, placeholder: "Reasons, one per line (at most 20)" });
    fields.push(verdict, reasons);
    body = () => ({ passed: verdict.value === "pass", reasons: reasonLines(reasons.value) });
  } else if (action === "dispute") {
    const reason = h("input", { type: "text", placeholder: "Why" });
    fields.push(reason);
    body = () => ({ reason: reason.value });
  } else if (action === "ruling") {
    const pay = h(
      "select",
      { "aria-label": "Ruling" },
      h("option", { value: "agent" }, "Pay the agent"),
      h("option", { value: "poster" }, "Refund the poster"),
    );
    const note = h("input", { type: "text", placeholder: "Note" });
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
          "browser. From a terminal: ",
        h("code", {}, `adjudge task verdict ${task.id} --verifier-key KEY.pem`),
        " (add --fail and --reason to fail it), or run adjudge worker.",
      ),
    );
  }
  const path = action === "submit" ? "submissions" : action === "dispute" ? "disputes" : action;
  const form = h(
    "form",
    {
      class: "action",
      onsubmit: async (event) => {
        event.preventDefault();
        status.textContent = "…";
        try {
          const answer = await api("POST", `/tasks/${task.id}/${path}`, body());
          if (action === "dry-run") {
            status.replaceChildren(
              `Dry run: ${answer.passed ? "would pass" : "would fail"}, score ${answer.score}. `,
              h("ul", {}, (answer.reasons || []).map((r) => h("li", {}, r))),
              h("p", {}, answer.note || ""),
            );
            return;
          }
          await signIn(); // the balance may have moved
          await taskDetail(task.id);
        } catch (err) {
          status.replaceChildren(failure(err));
        }
      },
    },
    fields.length ? h("h4", {}, label) : null,
    fields,
    h("button", { type: "submit" }, label),
    status,
  );
  return form;
}

function actions(task) {
  const offered = actionsFor(task, me);
  if (!offered.length) return h("p", {}, "Nothing for you to do on this task now.");
  return offered.map(([action, label]) => actionForm(task, action, label));
}

async function taskDetail(id) {
  const t = await api("GET", `/tasks/${encodeURIComponent(id)}`);
  const facts = [
    ["Status", t.status + (t.ending ? ` (${t.ending})` : "")],
    ["Mode", t.mode + (t.verifier ? `, verifier ${t.verifier}` : "")],
    ["Reward", `${formatAmount(t.reward)} (${t.reward} minor units)`],
    ["Poster", t.poster],
    ["Agent", t.agent || "none yet"],
    ["Attempts", `${t.attempts} of ${t.max_attempts}`],
    ["Posted", shortTime(t.posted_at)],
    ["Deadline", shortTime(t.deadline)],
    ["Private", t.private ? "yes" : "no"],
  ];
  show(
    h("p", {}, h("a", { href: "#/tasks" }, "← Tasks")),
    h("h2", {}, t.title),
    h("dl", {}, facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    t.brief ? [h("h3", {}, "Brief"), h("pre", { class: "text" }, t.brief)] : null,
    t.criteria ? [h("h3", {}, "Criteria"), h("pre", {}, JSON.stringify(t.criteria, null, 2))] : null,
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
    me ? [h("h3", {}, "What you can do"), actions(t)] : null,
  );
}

async function postForm() {
  const title = h("input", { type: "text", required: true, maxlength: 200 });
  const brief = h("textarea", { rows: 4 });
  const reward = h("input", { type: "text", required: true, inputmode: "numeric", placeholder: "2000000 = 2 USDC" });
  const hours = h("input", { type: "number", min: 1, max: 2160, value: 72 });
  const mode = h("select", {}, ["manual", "auto", "agent"].map((m) => h("option", { value: m }, m)));
  const verifier = h("input", { type: "text", placeholder: "for agent mode: an opted-in verifier" });
  const priv = h("input", { type: "checkbox" });
  const lenient = h("input", { type: "checkbox" });
  const criteria = h("textarea", { rows: 6, placeholder: '{"min_length": 200, "contains_keywords": ["escrow"]}' });
  const status = h("p", { class: "status-line" });
  const label = (text, input) => h("label", {}, h("span", {}, text), input);
  show(
    h("h2", {}, "Post a task"),
    h(
      "form",
      {
        class: "post",
        onsubmit: async (event) => {
          event.preventDefault();
          const parsed = parseCriteria(criteria.value);
          if (parsed.error) {
            status.replaceChildren(h("span", { class: "error" }, parsed.error));
            return;
          }
          try {
            const task = await api("POST", "/tasks", {
              title: title.value,
              brief: brief.value,
              reward: reward.value.trim(),
              deadline_hours: Number(hours.value),
              mode: mode.value,
              verifier: verifier.value.trim() || null,
              private: priv.checked,
              criteria: parsed.criteria,
              lenient_criteria: lenient.checked,
            });
            location.hash = `#/tasks/${task.id}`;
          } catch (err) {
            status.replaceChildren(failure(err));
          }
        },
      },
      label("Title", title),
      label("Brief", brief),
      label("Reward (minor units)", reward),
      label("Deadline (hours from now)", hours),
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
  const { verifiers: list } = await api("GET", "/verifiers");
  show(
    h("h2", {}, "Verifiers who take agent-mode tasks"),
    list.length
      ? h("ul", {}, list.map((v) => h("li", {}, h("strong", {}, v.id), ` · key ${v.verifier_key || "none"} · reputation ${v.reputation}`)))
      : h("p", {}, "No verifier has opted in."),
  );
}

async function receipt(id) {
  const r = await api("GET", `/receipts/${encodeURIComponent(id)}`);
  show(
    h("h2", {}, `Receipt ${id}`),
    h(
      "p",
      {},
      "Verify it offline: save ",
      h("a", { href: `${API}/receipts/${encodeURIComponent(id)}/envelope` }, "its envelope"),
      " (with your API key) and run ",
      h("code", {}, "adjudge receipt verify FILE --key FINGERPRINT"),
      ".",
    ),
    h("pre", {}, JSON.stringify(r, null, 2)),
  );
}

async function receiptLog() {
  const head = await api("GET", "/receipts/head");
  show(
    h("h2", {}, "Receipt log"),
    h(
      "dl",
      {},
      h("dt", {}, "Receipts"),
      h("dd", {}, head.seq),
      h("dt", {}, "Last digest"),
      h("dd", { class: "digest" }, head.digest || "none"),
      h("dt", {}, "Signing key"),
      h("dd", { class: "digest" }, head.key || "unknown"),
    ),
  );
}

// --- routing ----------------------------------------------------------------------------------

async function route() {
  const [, view, id] = (location.hash || "#/tasks").split("/");
  if (!key()) {
    show(
      h("h2", {}, "Sign in"),
      h("p", {}, "Paste an API key above. `make demo` prints keys for its demo accounts."),
    );
    return;
  }
  try {
    if (view === "tasks" && id) await taskDetail(decodeURIComponent(id));
    else if (view === "post") await postForm();
    else if (view === "verifiers") await verifiers();
    else if (view === "receipts" && id) await receipt(decodeURIComponent(id));
    else if (view === "receipts") await receiptLog();
    else await taskList();
  } catch (err) {
    show(failure(err));
  }
}

window.addEventListener("hashchange", route);
await signIn();
await route();
