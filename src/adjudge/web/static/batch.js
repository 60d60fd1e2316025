// The batch viewer: `adjudge check-batch` results in a browser (docs/guide/criteria.md, "Browse a
// batch"). Self-contained on purpose: no imports, no network. The web UI imports it for its
// #/batch page, where the person picks JSONL files that are read here and never sent anywhere;
// `adjudge check-batch --html` inlines this same file into one HTML page with the results in a
// JSON block. Every text from a result is put on the page as text, never as HTML.

/** The text the check reads of a result: a string, or an object's string `output`, else its JSON. */
export function resultText(result) {
  if (result == null) return "";
  if (typeof result === "string") return result;
  if (typeof result === "object" && typeof result.output === "string") return result.output;
  return JSON.stringify(result);
}

/** The key a record is compared by across runs: its `id`, else its line number. */
export function recordKey(record) {
  return record.id != null ? `id ${String(record.id)}` : `line ${record.line}`;
}

/**
 * One run from the text of its JSONL files: `check-batch` verdict lines (`{line, id, passed,
 * score, reasons, breakdown}` or `{line, id, error}`) and, optionally, the cases file they
 * came from (`{id, result, criteria}` per line), joined by line number so the text can be
 * shown. A line holding both (as `--html` embeds them) stands alone. Returns the records in
 * line order and the problems found (a line that is not JSON, say).
 */
export function parseRun(texts) {
  const verdicts = new Map();
  const cases = new Map();
  const problems = [];
  texts.forEach((text, fileIndex) => {
    String(text ?? "")
      .split(/\r?\n/)
      .forEach((raw, i) => {
        if (!raw.trim()) return;
        let value;
        try {
          value = JSON.parse(raw);
        } catch {
          problems.push(`file ${fileIndex + 1}, line ${i + 1} is not JSON`);
          return;
        }
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
          problems.push(`file ${fileIndex + 1}, line ${i + 1} is not an object`);
          return;
        }
        const isVerdict = "passed" in value || "error" in value;
        if (isVerdict) {
          const line = Number.isInteger(value.line) ? value.line : i + 1;
          verdicts.set(line, { ...(verdicts.get(line) || {}), ...value, line });
        } else if ("result" in value || "criteria" in value) {
          cases.set(i + 1, value);
        } else {
          problems.push(`file ${fileIndex + 1}, line ${i + 1} is neither a verdict nor a case`);
        }
      });
  });
  const records = [...verdicts.values()]
    .sort((a, b) => a.line - b.line)
    .map((v) => {
      const c = cases.get(v.line) || {};
      return {
        line: v.line,
        id: v.id ?? c.id ?? null,
        passed: v.error ? null : Boolean(v.passed),
        score: v.error ? null : Number(v.score),
        reasons: Array.isArray(v.reasons) ? v.reasons.map(String) : [],
        breakdown: Array.isArray(v.breakdown) ? v.breakdown : [],
        error: v.error || null,
        result: "result" in v ? v.result : c.result,
        criteria: "criteria" in v ? v.criteria : c.criteria,
        spans: Array.isArray(v.spans) ? v.spans : null,
      };
    });
  return { records, problems };
}

/**
 * A run's figures: how many records were checked and passed, the bad lines, the hard failures
 * (no breakdown: failed before any rule was scored), and per rule (each breakdown item's name)
 * the records it was scored on, those where it scored 100% ("passes") and its mean score.
 */
export function ruleRates(records) {
  const judged = records.filter((r) => !r.error);
  const rules = new Map();
  let hard = 0;
  for (const r of judged) {
    if (!r.breakdown.length && !r.passed) hard += 1;
    for (const item of r.breakdown) {
      const name = String(item.name);
      const rule = rules.get(name) || { name, scored: 0, passes: 0, total: 0 };
      rule.scored += 1;
      rule.total += Number(item.score);
      if (Number(item.score) >= 1) rule.passes += 1;
      rules.set(name, rule);
    }
  }
  return {
    checked: judged.length,
    passed: judged.filter((r) => r.passed).length,
    bad: records.length - judged.length,
    hard,
    rules: [...rules.values()]
      .map((r) => ({ name: r.name, scored: r.scored, passes: r.passes, mean: r.total / r.scored }))
      .sort((a, b) => a.passes / a.scored - b.passes / b.scored || a.name.localeCompare(b.name)),
  };
}

/** A share as the viewer shows it: "2/3 (66.7%)"; "n/a" of nothing. */
export function share(part, whole) {
  if (!whole) return "n/a";
  return `${part}/${whole} (${(Math.round((1000 * part) / whole) / 10).toFixed(1)}%)`;
}

/** A record's verdict in words: "PASS 85", "FAIL 40", or the bad line's error code. */
export function verdictText(record) {
  if (!record) return "absent";
  if (record.error) return `BAD LINE ${record.error.code || ""}`.trim();
  return `${record.passed ? "PASS" : "FAIL"} ${record.score}`;
}

/**
 * Two runs compared by record key: the records whose verdict changed (pass to fail, fail to
 * pass, or to or from a bad line), with both sides; and the keys only one run has.
 */
export function diffRuns(before, after) {
  const index = (records) => new Map(records.map((r) => [recordKey(r), r]));
  const a = index(before);
  const b = index(after);
  const changed = [];
  for (const [key, old] of a) {
    const now = b.get(key);
    if (now && (old.passed !== now.passed || Boolean(old.error) !== Boolean(now.error))) {
      changed.push({ key, before: old, after: now });
    }
  }
  return {
    common: [...a.keys()].filter((k) => b.has(k)).length,
    changed,
    nowPass: changed.filter((c) => c.after.passed === true).length,
    nowFail: changed.filter((c) => c.after.passed !== true).length,
    onlyBefore: [...a.keys()].filter((k) => !b.has(k)),
    onlyAfter: [...b.keys()].filter((k) => !a.has(k)),
  };
}

/**
 * The text cut into segments to mark, [{text, kind}] (kind null, "keyword" or "forbidden"),
 * from the spans `check-batch` wrote: the check's own matches, as UTF-16 offsets into the text
 * (a JavaScript string's indices), a forbidden phrase winning where the two overlap; and the
 * contains_keywords found nowhere. The viewer never searches the text itself: a browser folds
 * case otherwise than the check ("ﬁnal" holds "final" for the check, not for a search), so
 * without spans (a line written before they were, or a text they could not be carried back to)
 * nothing is marked and `marked` is false.
 */
export function highlight(text, criteria, spans) {
  const source = String(text ?? "");
  if (!Array.isArray(spans)) return { segments: [{ text: source, kind: null }], missing: [], marked: false };
  const marks = new Array(source.length).fill(null);
  const found = new Set();
  for (const span of spans) {
    const start = Number(span && span.start);
    const end = Number(span && span.end);
    const kind = span && (span.kind === "forbidden" ? "forbidden" : span.kind === "keyword" ? "keyword" : null);
    if (!kind || !Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end > source.length || start >= end) continue;
    found.add(String(span.text));
    for (let i = start; i < end; i++) {
      if (marks[i] !== "forbidden") marks[i] = kind;
    }
  }
  const segments = [];
  for (let i = 0; i < source.length; ) {
    let j = i;
    while (j < source.length && marks[j] === marks[i]) j++;
    segments.push({ text: source.slice(i, j), kind: marks[i] });
    i = j;
  }
  const wanted = criteria && Array.isArray(criteria.contains_keywords) ? criteria.contains_keywords : [];
  const missing = wanted.filter((k) => typeof k === "string" && k.trim() && !found.has(k));
  return { segments, missing, marked: true };
}

/** Which records a filter keeps: `verdict` ("failed", "passed", "bad" or "" for all), `rule`
 * (records where that rule scored under 100%), and `text` (in the id, the text or reasons). */
export function filterRecords(records, { verdict = "", rule = "", text = "" } = {}) {
  const needle = text.trim().toLowerCase();
  return records.filter((r) => {
    if (verdict === "failed" && (r.error || r.passed)) return false;
    if (verdict === "passed" && !r.passed) return false;
    if (verdict === "bad" && !r.error) return false;
    if (rule && !r.breakdown.some((item) => String(item.name) === rule && Number(item.score) < 1)) return false;
    if (needle) {
      const hay = [String(r.id ?? ""), resultText(r.result), ...r.reasons].join("\n").toLowerCase();
      if (!hay.includes(needle)) return false;
    }
    return true;
  });
}

// --- the page (DOM) ---------------------------------------------------------------------------

/** Records listed at once; a filter narrows the rest. */
const SHOWN = 200;

/** An element; strings become text nodes (never HTML). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, "");
    else if (value !== false && value != null) node.setAttribute(name, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace `node`'s children (nested lists flattened; null and false skipped). */
function fill(node, ...children) {
  node.replaceChildren(el("div", {}, children));
}

function pct(x) {
  return `${(Math.round(x * 1000) / 10).toFixed(1)}%`;
}

function ratesTable(run) {
  const f = ruleRates(run.records);
  return el(
    "section",
    { class: "batch-rates", "data-run": run.name },
    el("h3", {}, `Pass rate per rule: ${run.name}`),
    el(
      "p",
      { class: "batch-overall" },
      `Passed ${share(f.passed, f.checked)}`,
      f.hard ? ` · ${f.hard} failed before any rule was scored` : "",
      f.bad ? ` · ${f.bad} bad lines not checked` : "",
    ),
    el(
      "table",
      { class: "batch-rules" },
      el("thead", {}, el("tr", {}, ["Rule", "Scored 100%", "Mean score", ""].map((c) => el("th", {}, c)))),
      el(
        "tbody",
        {},
        f.rules.map((r) =>
          el(
            "tr",
            { "data-rule": r.name },
            el("td", {}, el("code", {}, r.name)),
            el("td", { class: "num rate" }, share(r.passes, r.scored)),
            el("td", { class: "num" }, pct(r.mean)),
            el("td", {}, el("meter", { min: "0", max: "1", value: String(r.passes / r.scored), "aria-label": `${r.name} pass rate` })),
          ),
        ),
      ),
    ),
  );
}

function breakdownList(record) {
  if (!record.breakdown.length) return null;
  return el(
    "ul",
    { class: "batch-breakdown" },
    record.breakdown.map((item) =>
      el(
        "li",
        { class: Number(item.score) >= 1 ? "full" : "short" },
        el("code", {}, String(item.name)),
        ` ${pct(Number(item.score))} × ${item.weight}`,
        item.reason ? ` — ${item.reason}` : "",
      ),
    ),
  );
}

function recordCard(record) {
  const text = resultText(record.result);
  const marked = highlight(text, record.criteria, record.spans);
  return el(
    "article",
    { class: `batch-record ${record.error ? "bad" : record.passed ? "pass" : "fail"}`, "data-key": recordKey(record) },
    el("h4", {}, `${recordKey(record)} (line ${record.line}): `, el("span", { class: "batch-verdict" }, verdictText(record))),
    record.error ? el("p", { class: "error" }, String(record.error.message || "")) : null,
    record.reasons.length ? el("ul", { class: "batch-reasons" }, record.reasons.map((r) => el("li", {}, r))) : null,
    breakdownList(record),
    marked.missing.length ? el("p", { class: "batch-missing" }, "Keywords not found: ", marked.missing.join(", ")) : null,
    record.result !== undefined && !record.error && !marked.marked
      ? el("p", { class: "muted batch-unmarked" }, "Nothing is marked: this line carries no spans of the check's matches (check-batch writes them).")
      : null,
    record.result === undefined
      ? el("p", { class: "muted" }, "The text is not loaded: add the cases file to this run to see it.")
      : el(
          "pre",
          { class: "text batch-text" },
          marked.segments.map((s) => (s.kind ? el("mark", { class: s.kind, title: s.kind === "forbidden" ? "forbidden phrase" : "keyword" }, s.text) : s.text)),
        ),
  );
}

function recordsSection(run) {
  const rules = ruleRates(run.records).rules.map((r) => r.name);
  const list = el("div", { class: "batch-list" });
  const verdict = el(
    "select",
    { "aria-label": "Verdict" },
    [["failed", "Failed"], ["passed", "Passed"], ["bad", "Bad lines"], ["", "All"]].map(([v, t]) => el("option", { value: v }, t)),
  );
  const rule = el("select", { "aria-label": "Rule under 100%" }, el("option", { value: "" }, "Any rule"), rules.map((r) => el("option", { value: r }, r)));
  const search = el("input", { type: "search", placeholder: "Text, id or reason", "aria-label": "Search records" });
  const render = () => {
    const kept = filterRecords(run.records, { verdict: verdict.value, rule: rule.value, text: search.value });
    fill(
      list,
      el("p", { class: "batch-count" }, `${kept.length} of ${run.records.length} records`, kept.length > SHOWN ? `; the first ${SHOWN} shown` : ""),
      kept.slice(0, SHOWN).map(recordCard),
    );
  };
  for (const input of [verdict, rule]) input.addEventListener("change", render);
  search.addEventListener("input", render);
  render();
  return el(
    "section",
    { class: "batch-records" },
    el("h3", {}, `Records: ${run.name}`),
    el("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, el("label", {}, "Verdict ", verdict), el("label", {}, "Rule ", rule), el("label", {}, "Search ", search)),
    list,
  );
}

function side(record) {
  return el("td", {}, el("span", { class: "batch-verdict" }, verdictText(record)), record.reasons.length ? el("ul", {}, record.reasons.map((r) => el("li", {}, r))) : null);
}

function diffSection(a, b) {
  const d = diffRuns(a.records, b.records);
  return el(
    "section",
    { class: "batch-diff" },
    el("h3", {}, `Changed verdicts: ${a.name} → ${b.name}`),
    el(
      "p",
      { class: "batch-diff-summary" },
      `${d.changed.length} of ${d.common} records in both runs changed verdict (${d.nowPass} now pass, ${d.nowFail} now fail)`,
      d.onlyBefore.length ? `; ${d.onlyBefore.length} only in ${a.name}` : "",
      d.onlyAfter.length ? `; ${d.onlyAfter.length} only in ${b.name}` : "",
      ".",
    ),
    d.changed.length
      ? el(
          "table",
          { class: "batch-changes" },
          el("thead", {}, el("tr", {}, ["Record", `Before (${a.name})`, `After (${b.name})`].map((c) => el("th", {}, c)))),
          el("tbody", {}, d.changed.map((c) => el("tr", { "data-key": c.key }, el("td", {}, c.key), side(c.before), side(c.after)))),
        )
      : null,
  );
}

/** The viewer of one run, or of two with their diff: `runs` are [{name, records}]. */
export function batchViewer(runs) {
  const parts = runs.map(ratesTable);
  if (runs.length === 2) parts.push(diffSection(runs[0], runs[1]));
  parts.push(...runs.map(recordsSection));
  return el("div", { class: "batch-viewer" }, parts);
}

async function readRun(input, fallback) {
  const files = [...input.files];
  if (!files.length) return fallback;
  const parsed = parseRun(await Promise.all(files.map((f) => f.text())));
  return { name: files.map((f) => f.name).join(" + "), ...parsed };
}

/**
 * The batch page: pick run A's files (the verdicts JSONL from `check-batch --out`, with its
 * cases JSONL to see the text) and optionally run B's to compare; read here, sent nowhere.
 * `preloaded` (a run embedded by `check-batch --html`) stands as run A until A is picked.
 */
export function batchPage(preloaded = null) {
  const inputA = el("input", { type: "file", accept: ".jsonl,.json,.txt", multiple: true, id: "batch-run-a" });
  const inputB = el("input", { type: "file", accept: ".jsonl,.json,.txt", multiple: true, id: "batch-run-b" });
  const out = el("div", { class: "batch-out", "aria-live": "polite" });
  const render = async () => {
    const runs = [await readRun(inputA, preloaded), await readRun(inputB, null)].filter(Boolean);
    if (!runs.length) {
      fill(out, el("p", { class: "muted" }, "Choose a run's files to see it."));
      return;
    }
    const problems = runs.flatMap((r) => (r.problems || []).map((p) => `${r.name}: ${p}`));
    fill(
      out,
      problems.length ? el("ul", { class: "error batch-problems" }, problems.slice(0, 20).map((p) => el("li", {}, p))) : null,
      batchViewer(runs),
    );
  };
  inputA.addEventListener("change", render);
  inputB.addEventListener("change", render);
  render();
  return el(
    "section",
    { class: "batch-page" },
    el("h2", {}, "Batch viewer"),
    el(
      "p",
      {},
      "Results of ",
      el("code", {}, "adjudge check-batch CASES --out verdicts.jsonl"),
      ": choose the verdicts file, with the cases file for the text. The files are read in this browser and sent nowhere.",
    ),
    el(
      "form",
      { class: "filters batch-files", onsubmit: (e) => e.preventDefault() },
      el("label", { for: "batch-run-a" }, preloaded ? `Run A (${preloaded.name}; pick files to replace it)` : "Run A"),
      inputA,
      el("label", { for: "batch-run-b" }, "Run B, to compare (optional)"),
      inputB,
    ),
    out,
  );
}

// A page written by `check-batch --html` carries its run in a JSON block: show it.
if (typeof document !== "undefined") {
  const embedded = document.getElementById("batch-data");
  if (embedded) {
    const data = JSON.parse(embedded.textContent);
    const runs = data.runs.map((r) => ({ name: String(r.name), ...parseRun([r.records.map((x) => JSON.stringify(x)).join("\n")]) }));
    const main = document.querySelector("main");
    main.replaceChildren(batchPage(runs[0]));
  }
}
