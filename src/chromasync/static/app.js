// The chromasync search page: plain JavaScript over the REST API, no build step.
// Every piece of index data is put into the page with textContent, never as HTML.
"use strict";

const state = { sources: new Set(), tags: [], tagsAll: false, after: "", before: "" };
const $ = (id) => document.getElementById(id);
let lastQuery = "";
let searchTimer = null;
let searchSeq = 0;
let answerAbort = null;
const answerMode = () => $("mode-answer").checked;

function token() { return sessionStorage.getItem("chromasync-token") || ""; }

// `chromasync serve` prints the page's URL with its token after `#token=` (a fragment never
// reaches the server or its logs): keep it for this tab, then take it out of the address bar.
function tokenFromFragment() {
  const found = /(?:^|&)token=([^&]*)/.exec(location.hash.replace(/^#/, ""));
  if (!found) return;
  sessionStorage.setItem("chromasync-token", decodeURIComponent(found[1]));
  history.replaceState(null, "", location.pathname + location.search);
}
tokenFromFragment();

async function api(path) {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  const response = await fetch(path, { headers });
  if (response.status === 401) {
    $("auth").hidden = false;
    $("token").focus();
    throw new Error("this service needs its API token");
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = typeof body.detail === "string" ? body.detail
      : Array.isArray(body.detail) ? body.detail.map((d) => `${d.where}: ${d.problem}`).join("; ")
      : response.statusText;
    throw new Error(detail);
  }
  return body;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function when(iso) {
  if (!iso) return "never";
  const date = new Date(iso);
  return date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "short" });
}

// -- status and source chips --------------------------------------------------------------

async function loadStatus() {
  let status;
  try { status = await api("/status"); } catch (error) { return showStatusError(error); }
  const box = $("status");
  box.replaceChildren();
  const rows = [
    ["sources", status.totals.sources], ["files", status.totals.files],
    ["chunks", status.totals.chunks], ["last run", when(status.last_run)],
  ];
  if (status.jobs.running || status.jobs.queued) rows.push(["syncing", `${status.jobs.running + status.jobs.queued} job(s)`]);
  if (status.owner) rows.push(["owner", `${status.owner.role} (pid ${status.owner.pid})`]);
  for (const [name, value] of rows) box.append(el("dt", { text: name }), el("dd", { text: String(value) }));
  const chips = $("source-chips");
  chips.replaceChildren();
  if (!status.sources.length) chips.append(el("span", { class: "muted", text: "no source indexed yet" }));
  for (const source of status.sources) {
    const chip = el("button", {
      type: "button", class: "chip" + (state.sources.has(source.source) ? " on" : ""),
      "data-source": source.source, title: `${source.root} · ${source.files} files`,
      onclick: () => { toggle(state.sources, source.source); renderActiveFilters(); loadStatus(); runSearch(); },
    }, el("span", { text: source.source }), el("small", { text: String(source.chunks) }));
    chips.append(chip);
  }
}

function showStatusError(error) {
  $("status").replaceChildren(el("dt", { text: "status" }), el("dd", { class: "error", text: error.message }));
}

function toggle(set, value) { if (set.has(value)) set.delete(value); else set.add(value); }

function renderActiveFilters() {
  const box = $("active-filters");
  box.replaceChildren();
  const remove = (fn) => () => { fn(); renderActiveFilters(); loadStatus(); runSearch(); };
  for (const source of state.sources) {
    box.append(el("button", { type: "button", class: "chip on", "data-filter": "source",
      onclick: remove(() => state.sources.delete(source)) }, `source: ${source} ✕`));
  }
  for (const tag of state.tags) {
    box.append(el("button", { type: "button", class: "chip on tag", "data-filter": "tag",
      onclick: remove(() => { state.tags = state.tags.filter((t) => t !== tag); }) }, `#${tag} ✕`));
  }
  if (state.after || state.before) {
    box.append(el("button", { type: "button", class: "chip on", "data-filter": "date",
      onclick: remove(() => { state.after = state.before = ""; $("after").value = $("before").value = ""; }) },
      `date: ${state.after || "…"} → ${state.before || "…"} ✕`));
  }
}

function addTag(tag) {
  tag = tag.trim().replace(/^#/, "");
  if (tag && !state.tags.includes(tag)) state.tags.push(tag);
  renderActiveFilters();
  runSearch();
}

// -- search -------------------------------------------------------------------------------

// Never marked unless the query has nothing else: the same list as retrieve/highlight.py's
// STOP_WORDS (a test compares them).
const STOP_WORDS = new Set([
  "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been",
  "being", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "for", "from",
  "get", "had", "has", "have", "he", "her", "here", "him", "his", "how", "i", "if", "in",
  "into", "is", "it", "its", "just", "may", "me", "might", "must", "my", "no", "not", "of",
  "on", "only", "or", "our", "out", "own", "s", "same", "shall", "she", "should", "so",
  "some", "such", "t", "than", "that", "the", "their", "them", "then", "there", "these",
  "they", "this", "those", "to", "too", "up", "very", "was", "we", "were", "what", "when",
  "where", "which", "who", "whom", "whose", "why", "will", "with", "would", "you", "your"
]);

function terms(query) {
  const words = [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w))];
  const kept = words.filter((w) => !STOP_WORDS.has(w));
  return (kept.length ? kept : words).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
}

// Whole words only ("do" never marks inside "Sourdough"), with a plural or -ed/-ing ending.
function wordPattern(words) {
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${words.join("|")})(?:s|es|ed|ing|ly)?(?![\\p{L}\\p{N}])`, "giu");
}

function highlighted(text, query) {
  const fragment = document.createDocumentFragment();
  const words = terms(query);
  if (!words.length) { fragment.append(text); return fragment; }
  const pattern = wordPattern(words);
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    fragment.append(text.slice(last, match.index), el("mark", { text: match[0] }));
    last = match.index + match[0].length;
  }
  fragment.append(text.slice(last));
  return fragment;
}

// -- Markdown, rendered safely --------------------------------------------------------------
// Headings, fenced code (with its language), lists, tables, quotes, links, inline code and
// emphasis become elements; every piece of text goes in with textContent, so raw HTML in a
// note shows as text and never runs. Links open only http(s) and mailto targets; shortcodes,
// link definitions and front matter are not shown.

const MD_FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const MD_CODE_SHORTCODE = /^\s*\{\{[<%]\s*(code-toggle|code|highlight)\b([^}]*)[%>]\}\}\s*$/;
const MD_SHORTCODE = /^\s*\{\{[<%].*[%>]\}\}\s*$/;
const MD_LINK_DEF = /^\s{0,3}\[([^\]]+)\]:\s*(\S+)/;
const MD_HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const MD_LIST_ITEM = /^(\s{0,6})([-*+]|\d{1,3}[.)])\s+(.*)$/;
const MD_TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)+\|?\s*$/;
const MD_INLINE = /(`+)([^`]+?)\1|\*\*([^*\n]+)\*\*|(?<![\w*])\*([^*\s][^*\n]*)\*(?![\w*])|(!?)\[([^\]\n]{1,200})\](?:\(([^)\s]{0,500})(?:\s+"[^"]*")?\)|\[([^\]\n]{0,200})\])|\[(\d{1,3})\]/g;

function safeHref(url) {
  try {
    const parsed = new URL(url);
    return ["http:", "https:", "mailto:"].includes(parsed.protocol) ? parsed.href : null;
  } catch { return null; }  // relative to the note's own site: no page here to open it in
}

// `cite(n)` turns an answer's [n] markers into citation links (search hits pass none).
function mdInline(text, query, refs, cite, depth = 0) {
  const out = document.createDocumentFragment();
  let last = 0;
  for (const m of text.matchAll(MD_INLINE)) {
    out.append(highlighted(text.slice(last, m.index), query));
    last = m.index + m[0].length;
    if (m[2] !== undefined) out.append(el("code", { text: m[2] }));
    else if (m[3] !== undefined) out.append(el("strong", {}, mdInline(m[3], query, refs, cite, depth + 1)));
    else if (m[4] !== undefined) out.append(el("em", {}, mdInline(m[4], query, refs, cite, depth + 1)));
    else if (m[6] !== undefined) {
      const target = m[7] !== undefined ? m[7] : refs.get((m[8] || m[6]).toLowerCase());
      const href = m[5] || !target ? null : safeHref(target);
      const words = depth < 2 ? mdInline(m[6], query, refs, null, depth + 1) : m[6];
      out.append(href ? el("a", { href, target: "_blank", rel: "noopener noreferrer" }, words)
        : el("span", { class: "md-link" }, words));
    } else if (m[9] !== undefined) out.append(cite ? cite(Number(m[9])) || m[0] : m[0]);
  }
  out.append(highlighted(text.slice(last), query));
  return out;
}

function codeBlock(text, lang) {
  return el("figure", { class: "md-code", "data-lang": lang || "" },
    lang ? el("figcaption", { text: lang }) : null,
    el("pre", {}, el("code", { text })));
}

function renderMarkdown(source, query, cite = null) {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const refs = new Map();
  for (const line of lines) {
    const m = line.match(MD_LINK_DEF);
    if (m) refs.set(m[1].toLowerCase(), m[2]);
  }
  const out = document.createDocumentFragment();
  let para = [];
  const flush = () => {
    if (para.length) out.append(el("p", {}, mdInline(para.join(" "), query, refs, cite)));
    para = [];
  };
  let i = 0;
  if (/^(---|\+\+\+)\s*$/.test(lines[0] || "")) {  // front matter
    const end = lines.findIndex((line, n) => n > 0 && line.trim() === lines[0].trim());
    if (end > 0) i = end + 1;
  }
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if ((m = line.match(MD_FENCE))) {
      flush();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) body.push(lines[i]);
      out.append(codeBlock(body.join("\n"), m[2]));
      i++;
    } else if ((m = line.match(MD_CODE_SHORTCODE))) {
      flush();
      const close = new RegExp(`^\\s*\\{\\{[<%]\\s*/${m[1]}\\s*[%>]\\}\\}\\s*$`);
      const body = [];
      for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
      const lang = (m[2].match(/\blang\s*=\s*["']?([\w+#.-]+)/) || [])[1] || (m[1] === "code-toggle" ? "toml" : "");
      out.append(codeBlock(body.join("\n"), lang));
      i++;
    } else if (MD_SHORTCODE.test(line) || MD_LINK_DEF.test(line)) {
      flush();
      i++;
    } else if ((m = line.match(MD_HEADING))) {
      flush();
      out.append(el(`h${Math.min(6, m[1].length + 2)}`, { class: "md-h" }, mdInline(m[2], query, refs, cite)));
      i++;
    } else if (line.includes("|") && i + 1 < lines.length && MD_TABLE_RULE.test(lines[i + 1])) {
      flush();
      const cells = (row) => row.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
      const head = el("tr", {}, ...cells(line).map((c) => el("th", {}, mdInline(c, query, refs, cite))));
      const rows = [];
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) {
        rows.push(el("tr", {}, ...cells(lines[i]).map((c) => el("td", {}, mdInline(c, query, refs, cite)))));
      }
      out.append(el("table", { class: "md-table" }, el("thead", {}, head), el("tbody", {}, ...rows)));
    } else if ((m = line.match(MD_LIST_ITEM))) {
      flush();
      const ordered = /\d/.test(m[2]);
      const items = [];
      while (i < lines.length && (m = lines[i].match(MD_LIST_ITEM))) {
        let text = m[3];
        for (i++; i < lines.length && /^\s{2,}\S/.test(lines[i]) && !MD_LIST_ITEM.test(lines[i]); i++) text += " " + lines[i].trim();
        items.push(el("li", {}, mdInline(text, query, refs, cite)));
      }
      out.append(el(ordered ? "ol" : "ul", { class: "md-list" }, ...items));
    } else if (/^\s*>/.test(line)) {
      flush();
      const quoted = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^\s*>\s?/, ""));
      const kind = (quoted[0] || "").match(/^\[!(\w+)\]\s*$/);
      if (kind) quoted.shift();
      out.append(el("blockquote", { class: "md-quote" }, kind ? el("strong", { text: kind[1].toLowerCase() + ": " }) : null,
        mdInline(quoted.join(" "), query, refs, cite)));
    } else if (!line.trim()) {
      flush();
      i++;
    } else {
      para.push(line.trim());
      i++;
    }
  }
  flush();
  return out;
}

// The chunk's own first heading line, when the hit's heading (shown above it) ends with it.
function withoutHeading(text, heading) {
  const m = text.match(/^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*(\n|$)/);
  return m && heading && heading.endsWith(m[1]) ? text.slice(m[0].length) : text;
}

// A hit's text, cut at a line near `size` characters (the block it cuts is closed).
function hitExcerpt(text, size = 1600) {
  if (text.length <= size) return text;
  const cut = text.lastIndexOf("\n", size);
  let head = text.slice(0, cut > size / 2 ? cut : size);
  if (((head.match(/^\s{0,3}(`{3,}|~{3,})/gm) || []).length) % 2) head += "\n```";
  return head + "\n\n…";
}

function runSearch(delay = 0) {
  clearTimeout(searchTimer);
  if (answerMode()) return;  // an answer is asked for on submit only (it may cost a model call)
  searchTimer = setTimeout(doSearch, delay);
}

async function doSearch() {
  const query = $("q").value.trim();
  lastQuery = query;
  const seq = ++searchSeq;
  if (!query) {
    $("results").replaceChildren();
    $("message").textContent = "Type a query to search the index.";
    return;
  }
  const params = new URLSearchParams({ q: query, k: "20" });
  for (const source of state.sources) params.append("source", source);
  for (const tag of state.tags) params.append("tag", tag);
  if (state.tagsAll) params.set("tags_all", "true");
  if (state.after) params.set("after", state.after);
  if (state.before) params.set("before", state.before);
  $("message").textContent = "Searching…";
  let body;
  try { body = await api("/search?" + params); } catch (error) {
    if (seq !== searchSeq) return;
    $("results").replaceChildren();
    $("message").textContent = error.message;
    $("message").className = "message error";
    return;
  }
  if (seq !== searchSeq) return;
  $("message").className = "message";
  $("message").textContent = body.hits.length
    ? `${body.hits.length} hit${body.hits.length === 1 ? "" : "s"} for “${query}”`
    : `No hits for “${query}” with these filters.`;
  const items = body.hits.map((hit) => renderHit(hit, query));
  // the "weaker matches" line, where the server's relevance scale puts it (`weaker_from`)
  if (Number.isInteger(body.weaker_from) && body.weaker_from > 0 && body.weaker_from < items.length) {
    items.splice(body.weaker_from, 0, el("li", { class: "weaker", role: "separator",
      text: "weaker matches (relevance under half the best's)" }));
  }
  $("results").replaceChildren(...items);
}

function renderHit(hit, query) {
  const meta = hit.metadata || {};
  const tags = Array.isArray(meta.tags) ? meta.tags : [];
  const date = typeof meta.date === "string" ? meta.date.slice(0, 10) : null;
  const cite = el("a", { class: "cite", href: `#${hit.source}/${hit.path}:${hit.start_line}`,
    title: "open the file at this line",
    onclick: (event) => { event.preventDefault(); openFile(hit); } }, hit.citation);
  const editor = hit.open_url ? el("a", { class: "editor", href: hit.open_url, text: "editor" }) : null;
  return el("li", { class: "hit" },
    el("div", { class: "hit-head" },
      cite,
      el("span", { class: "badge source", text: hit.source }),
      date ? el("span", { class: "badge date", text: date }) : null,
      el("span", { class: "score", title: `relevance (0-1); score ${hit.score.toFixed(3)}`,
        text: hit.relevance == null ? hit.score.toFixed(3) : hit.relevance.toFixed(2) }),
      editor),
    hit.heading ? el("div", { class: "heading" }, highlighted(hit.heading, query)) : null,
    (hit.also_at || []).length ? el("div", { class: "also-at", text: `also at: ${hit.also_at.join(", ")}` }) : null,
    el("div", { class: "snippet md" }, renderMarkdown(hitExcerpt(withoutHeading(hit.text, hit.heading)), query)),
    tags.length ? el("div", { class: "hit-tags" }, ...tags.map((tag) =>
      el("button", { type: "button", class: "chip small tag", title: "filter by this tag",
        onclick: () => addTag(tag) }, `#${tag}`))) : null);
}

// -- answers (POST /ask/stream: server-sent events read from the fetch body) ---------------

function askBody(question) {
  const body = { question, k: 8, sources: [...state.sources], tags: [...state.tags], tags_all: state.tagsAll };
  if (state.after) body.after = state.after;
  if (state.before) body.before = state.before;
  return body;
}

function* sseEvents(buffer) {
  // Complete events of `buffer.text` ("event: x\ndata: {...}\n\n"); the rest stays in it.
  let end;
  while ((end = buffer.text.indexOf("\n\n")) >= 0) {
    const block = buffer.text.slice(0, end);
    buffer.text = buffer.text.slice(end + 2);
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trim());
    }
    if (data.length) yield [event, JSON.parse(data.join("\n"))];
  }
}

function citationLink(citation) {
  const hit = { source: citation.source, path: citation.path, start_line: citation.start_line,
    end_line: citation.end_line, citation: citation.start_line ? `${citation.path}:${citation.start_line}-${citation.end_line}` : citation.path };
  return el("a", { class: "cite", href: `#${citation.source}/${citation.path}:${citation.start_line}`,
    "data-n": String(citation.n), title: `${citation.path}:${citation.start_line}-${citation.end_line}`,
    onclick: (event) => { event.preventDefault(); openFile(hit); } }, `[${citation.n}]`);
}

function renderAnswer(answer) {
  const byN = new Map(answer.citations.map((c) => [c.n, c]));
  const cite = (n) => (byN.has(n) ? citationLink(byN.get(n)) : null);
  const text = $("answer-text");
  text.replaceChildren();
  const parts = answer.parts && answer.parts.length ? answer.parts : [{ kind: "prose", text: answer.answer }];
  for (const part of parts) {
    if (part.kind === "code") {
      const block = codeBlock(part.text, part.lang);
      if (byN.has(part.source)) block.append(el("div", { class: "quoted-from" }, "quoted from ", cite(part.source)));
      text.append(block);
    } else text.append(renderMarkdown(part.text, "", cite));
  }
  const notes = [];
  if (answer.mode === "llm" && answer.model) notes.push(`written by ${answer.model}`);
  if (answer.mode === "extractive") notes.push("extractive answer: the sources' own sentences");
  if (answer.removed_citations) notes.push(`${answer.removed_citations} citation(s) naming no source removed`);
  for (const flag of answer.flags || []) if (flag !== "removed-citations") notes.push(flag);
  $("answer-notes").textContent = notes.join(" · ");
  $("answer-sources").replaceChildren(...answer.citations.map((c) => el("li", { class: "answer-source" },
    citationLink(c), " ", el("span", { text: answer.sources[c.n - 1] || c.path }),
    c.heading ? el("span", { class: "heading", text: ` (${c.heading})` }) : null)));
}

async function doAnswer() {
  const question = $("q").value.trim();
  if (!question) return;
  if (answerAbort) answerAbort.abort();
  answerAbort = new AbortController();
  const box = $("answer");
  $("results").replaceChildren();
  $("answer-text").replaceChildren();
  $("answer-notes").textContent = "";
  $("answer-sources").replaceChildren();
  box.hidden = false;
  $("message").className = "message";
  $("message").textContent = `Answering “${question}”…`;
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
  if (token()) headers.Authorization = "Bearer " + token();
  let response;
  try {
    response = await fetch("/ask/stream", { method: "POST", headers, body: JSON.stringify(askBody(question)),
      signal: answerAbort.signal });
  } catch (error) { if (error.name !== "AbortError") failAnswer(error.message); return; }
  if (response.status === 401) { $("auth").hidden = false; $("token").focus(); return failAnswer("this service needs its API token"); }
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    return failAnswer(typeof body.detail === "string" ? body.detail : response.statusText);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const buffer = { text: "" };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer.text += decoder.decode(value, { stream: true });
      for (const [event, data] of sseEvents(buffer)) {
        if (event === "token") $("answer-text").append(data.text);
        else if (event === "answer") { renderAnswer(data); $("message").textContent = `Answer to “${question}”`; }
        else if (event === "error") failAnswer(data.detail);
      }
    }
  } catch (error) { if (error.name !== "AbortError") failAnswer(error.message); }
}

function failAnswer(message) {
  $("message").textContent = message;
  $("message").className = "message error";
}

// -- the file viewer ----------------------------------------------------------------------

async function openFile(hit) {
  const dialog = $("viewer");
  $("viewer-title").textContent = `${hit.source} · ${hit.citation}`;
  const editor = $("viewer-editor");
  editor.hidden = !hit.open_url;
  if (hit.open_url) editor.href = hit.open_url;
  const body = $("viewer-body");
  body.replaceChildren(el("span", { class: "muted", text: "loading…" }));
  if (!dialog.open) dialog.showModal();
  let file;
  try {
    file = await api(`/file?${new URLSearchParams({ source: hit.source, path: hit.path })}`);
  } catch (error) {
    body.replaceChildren(el("span", { class: "error", text: error.message }));
    return;
  }
  const lines = file.text.replace(/\n$/, "").split("\n");
  // A document (PDF, DOCX...): its extracted text, as it was chunked, with a marker where
  // each page starts (the original file is not served).
  const pageAt = new Map();
  (file.page_starts || []).forEach((line, i) => { if (!pageAt.has(line)) pageAt.set(line, file.pages[i]); });
  let first = null;
  const rows = [];
  lines.forEach((line, index) => {
    const number = index + 1;
    if (pageAt.has(number)) rows.push(el("span", { class: "page-mark", text: `p. ${pageAt.get(number)}` }));
    const cited = number >= hit.start_line && number <= hit.end_line;
    const row = el("span", { class: "line" + (cited ? " cited" : ""), id: `L${number}` },
      el("span", { class: "ln", text: String(number) }), el("span", { class: "code", text: line || " " }));
    if (cited && first === null) first = row;
    rows.push(row);
  });
  body.replaceChildren(...rows);
  if (first) first.scrollIntoView({ block: "center" });
  showLinkedFrom(hit);
}

// "linked from": the indexed chunks that link to the open file (REST /links)
async function showLinkedFrom(hit) {
  const panel = $("viewer-links");
  panel.replaceChildren();
  let found;
  try {
    found = await api(`/links?${new URLSearchParams({ target: hit.path, limit: "200" })}`);
  } catch (error) {
    panel.replaceChildren(el("span", { class: "muted", text: `linked from: ${error.message}` }));
    return;
  }
  const files = found.files.filter((f) => f.source === hit.source && f.path !== hit.path);
  if (!files.length) {
    panel.replaceChildren(el("span", { class: "muted", text: "linked from: nothing indexed" }));
    return;
  }
  const items = files.flatMap((f) => f.chunks.flatMap((c) => c.links.map((link) => {
    const line = link.line || c.start_line;
    const open = () => openFile({ source: f.source, path: f.path, citation: `${f.path}:${line}`,
      start_line: line, end_line: link.line || c.end_line });
    const button = el("button", { type: "button", class: "link-from", onclick: open },
      `${f.path}:${link.line || "front matter"}`);
    return el("li", {}, button, " ", el("span", { class: "muted", text: link.text }));
  })));
  panel.replaceChildren(el("h3", { text: `linked from (${files.length})` }), el("ul", {}, ...items));
}

// -- summaries per group (GET /summaries) ----------------------------------------------------

async function loadSummaries() {
  const by = $("summary-by").value.trim();
  if (!by) return;
  const list = $("summaries");
  list.replaceChildren(el("li", { class: "muted", text: "summarising…" }));
  try {
    const body = await api(`/summaries?group_by=${encodeURIComponent(by)}&limit=30`);
    list.replaceChildren(...body.groups.map((g) => el("li", { class: "summary" },
      el("strong", { text: g.group }), " ", el("span", { class: "muted", text: `${g.files} file(s)` }),
      el("div", { class: "summary-terms muted", text: g.terms.join(", ") }),
      el("p", { class: "summary-text", text: g.summary }))));
  } catch (error) {
    list.replaceChildren(el("li", { class: "error", text: String(error.message || error) }));
  }
}

// -- wiring -------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (answerMode()) doAnswer(); else runSearch();
  });
  for (const id of ["mode-search", "mode-answer"]) {
    $(id).addEventListener("change", () => {
      $("answer").hidden = !answerMode();
      $("q").placeholder = answerMode() ? "Ask a question about your notes, docs and code…"
        : "Search your notes, docs and code…";
      if (!answerMode()) runSearch();
      else $("results").replaceChildren();
    });
  }
  $("q").addEventListener("input", () => { if ($("q").value.trim() !== lastQuery) runSearch(300); });
  $("tag-form").addEventListener("submit", (event) => {
    event.preventDefault();
    addTag($("tag-input").value);
    $("tag-input").value = "";
  });
  $("tags-all").addEventListener("change", (event) => { state.tagsAll = event.target.checked; runSearch(); });
  for (const id of ["after", "before"]) {
    $(id).addEventListener("change", (event) => { state[id] = event.target.value; renderActiveFilters(); runSearch(); });
  }
  $("auth-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem("chromasync-token", $("token").value);
    $("token").value = "";
    $("auth").hidden = true;
    loadStatus();
    runSearch();
  });
  $("summary-form").addEventListener("submit", (event) => { event.preventDefault(); loadSummaries(); });
  $("viewer-close").addEventListener("click", () => $("viewer").close());
  $("viewer").addEventListener("click", (event) => { if (event.target === $("viewer")) $("viewer").close(); });
  loadStatus();
  setInterval(loadStatus, 15000);
});
