// The EventScript playground's page: editors with highlighting and live diagnostics, a run with
// every step recorded by the server (eventscript.explain), and stepping through it. No build
// step and no dependencies: the server sends this file as it is.
"use strict";

const KEYWORDS = new Set(["in", "out", "type", "function", "case", "group", "for", "new", "true", "false",
  "arrive", "elapse", "elapsed", "if", "else", "double", "long", "string", "boolean", "time", "object"]);
const TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|("(?:[^"\\\n]|\\.)*"?)|(\b\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?\b)|([A-Za-z_$][A-Za-z0-9_$]*)(\s*\()?|(\[[^\]\n]*\])/g;
const HIGHLIGHT_LIMIT = 200000; // characters: longer texts are shown plain (a 10,000-event trace)
const CHECK_DELAY = 25; // ms after the last keystroke before asking for diagnostics

const state = {
  programs: [{ name: "program.es", text: "" }],
  topology: null, // YAML text of a topology, or null for a program or pipeline
  trace: "",
  tab: 0, // the program (or topology.yaml: index programs.length) shown in the editor
  diagnostics: {}, // program name -> diagnostics
  result: null, // the last run
  tops: [], // indexes of the top-level steps (one per trace event or timer firing)
  position: 0, // how many top-level steps have happened
  stage: 0,
  selectedKey: null, // JSON of the key followed
  example: "", // the id of the example the work began from ("" for none)
  editVersion: 0,
};

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
// Microseconds since the epoch as the tester writes times: ISO 8601, six fractional digits, Z.
function fmtTime(us) {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString(); // 2026-01-01T08:00:00.000Z
  return iso.slice(0, 23) + String(us - ms * 1000).padStart(3, "0") + "Z";
}
const show = (v) => (v === null || v === undefined ? "unset" : JSON.stringify(v));

// ---------------------------------------------------------------------------------------------
// Editors: a textarea over a highlighted copy of its text

function tokens(text, isProgram) {
  const out = [];
  if (text.length > HIGHLIGHT_LIMIT) return out;
  TOKEN.lastIndex = 0;
  let m;
  while ((m = TOKEN.exec(text)) !== null) {
    const start = m.index;
    if (m[1]) out.push([start, start + m[1].length, "tok-com"]);
    else if (m[2]) out.push([start, start + m[2].length, "tok-str"]);
    else if (m[3]) out.push([start, start + m[3].length, "tok-num"]);
    else if (m[4]) {
      const word = m[4];
      if (KEYWORDS.has(word)) out.push([start, start + word.length, word === "elapse" || word === "arrive" ? "tok-time" : "tok-kw"]);
      else if (m[5] || /^[A-Z]/.test(word)) out.push([start, start + word.length, "tok-ev"]);
    } else if (m[6] && !isProgram) out.push([start, start + m[6].length, "tok-time"]);
    if (m[0].length === 0) TOKEN.lastIndex++;
  }
  return out;
}

// decorations: [start, end, class, title]. A sweep over the marks' ends, so that a long trace
// (tens of thousands of tokens) highlights in linear time.
function highlighted(text, isProgram, decorations) {
  const marks = tokens(text, isProgram).map((t) => [...t, null]).concat(decorations)
    .map(([s, e, cls, title]) => [Math.max(0, Math.min(s, text.length)), Math.max(0, Math.min(e, text.length)), cls, title])
    .filter(([s, e]) => s < e);
  const events = [];
  marks.forEach((m, i) => { events.push([m[0], 1, i]); events.push([m[1], -1, i]); });
  events.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const active = new Set();
  const parts = [];
  let at = 0;
  const flush = (to) => {
    if (to <= at) return;
    const piece = esc(text.slice(at, to));
    if (!active.size) parts.push(piece);
    else {
      const on = [...active].map((i) => marks[i]);
      const title = on.map((m) => m[3]).filter(Boolean).join("\n");
      parts.push(`<span class="${on.map((m) => m[2]).join(" ")}"${title ? ` title="${esc(title)}"` : ""}>${piece}</span>`);
    }
    at = to;
  };
  for (const [pos, kind, i] of events) {
    flush(pos);
    if (kind > 0) active.add(i); else active.delete(i);
  }
  flush(text.length);
  return parts.join("") + "\n";
}

function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") starts.push(i + 1);
  return starts;
}

function offsetOf(text, line, col) {
  const starts = lineStarts(text);
  return Math.min(text.length, (starts[line - 1] ?? text.length) + col - 1);
}

// The extent underlined for a position: the word, string or bracketed group starting there.
function extentAt(text, offset) {
  const open = text[offset];
  const close = { "(": ")", "[": "]", "{": "}" }[open];
  if (close) {
    let depth = 0;
    for (let i = offset; i < Math.min(text.length, offset + 400); i++) {
      if (text[i] === open) depth++;
      else if (text[i] === close && --depth === 0) return i + 1;
      else if (text[i] === "\n") break;
    }
    return offset + 1;
  }
  const m = /^("(?:[^"\\\n]|\\.)*"?|[A-Za-z_$][A-Za-z0-9_$]*|\d[\w.]*|\S)/.exec(text.slice(offset));
  return offset + (m ? m[0].length : 1);
}

class Editor {
  constructor(root, isProgram, onInput) {
    this.textarea = root.querySelector("textarea");
    this.pre = root.querySelector("pre");
    this.isProgram = isProgram;
    this.decorations = [];
    this.textarea.addEventListener("input", () => { this.render(); onInput(this.textarea.value); });
    this.textarea.addEventListener("scroll", () => {
      this.pre.scrollTop = this.textarea.scrollTop;
      this.pre.scrollLeft = this.textarea.scrollLeft;
    });
    const caret = () => this.showCaretMessage();
    this.textarea.addEventListener("click", caret);
    this.textarea.addEventListener("keyup", caret);
    // Tab indents; Esc then Tab leaves the editor (else a keyboard could never leave it).
    this.tabLeaves = false;
    this.textarea.addEventListener("keydown", (e) => {
      if (e.key === "Escape") { this.tabLeaves = true; return; }
      if (e.key === "Tab" && !this.tabLeaves && !e.ctrlKey && !e.altKey && !e.metaKey) {
        e.preventDefault();
        if (!e.shiftKey) document.execCommand("insertText", false, "    ");
      }
      if (!["Shift", "Tab"].includes(e.key)) this.tabLeaves = false;
    });
    this.textarea.addEventListener("blur", () => { this.tabLeaves = false; });
  }
  get value() { return this.textarea.value; }
  set value(text) { this.textarea.value = text; this.render(); }
  decorate(decorations) {
    // (none before and none now: the text as drawn is right; drawing a 10,000-event trace's
    // highlighting again took a quarter of a second after each run)
    const unchanged = !decorations.length && !this.decorations.length;
    this.decorations = decorations;
    if (!unchanged) this.render();
    this.showCaretMessage();
  }
  // The message of the underline under the caret, below the editor (the textarea covers the
  // underlines, so they cannot show a tooltip of their own).
  showCaretMessage() {
    const box = this.textarea.closest(".editor").nextElementSibling;
    if (!box || !box.classList.contains("caret-message")) return;
    const at = this.textarea.selectionStart;
    const here = this.decorations.filter(([s, e, cls]) => s <= at && at <= e && cls.startsWith("diag-"));
    box.textContent = here.map((d) => d[3]).join("\n");
    box.className = "caret-message" + (here.length ? " " + here[0][2] : "");
  }
  render() {
    this.pre.innerHTML = highlighted(this.textarea.value, this.isProgram, this.decorations);
    this.pre.scrollTop = this.textarea.scrollTop;
  }
  reveal(line) {
    const lh = parseFloat(getComputedStyle(this.textarea).lineHeight) || 19;
    this.textarea.scrollTop = Math.max(0, (line - 3) * lh);
  }
  // The caret to line:col, so that the message of the mistake there shows below the editor and
  // typing mends it.
  goTo(line, col) {
    const at = offsetOf(this.value, line, col);
    this.textarea.focus({ preventScroll: true });
    this.textarea.setSelectionRange(at, at);
    this.reveal(line);
    this.showCaretMessage();
  }
}

let programEditor, traceEditor;

// ---------------------------------------------------------------------------------------------
// Talking to the server

async function post(path, body) {
  try {
    const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    return await response.json();
  } catch (err) {
    return { error: `the playground server did not answer (${err}); is 'eventscript playground' still running?`, unreachable: true };
  }
}

function request() {
  return { programs: state.programs, trace: state.trace, topology: state.topology };
}

// ---------------------------------------------------------------------------------------------
// Program tabs and diagnostics

function editingTopology() { return state.topology !== null && state.tab === state.programs.length; }

function renderTabs() {
  const nav = $("#program-tabs");
  nav.innerHTML = "";
  const names = state.programs.map((p) => p.name).concat(state.topology !== null ? ["topology.yaml"] : []);
  names.forEach((name, i) => {
    const b = document.createElement("button");
    b.textContent = name;
    b.className = i === state.tab ? "active" : "";
    b.dataset.tab = String(i);
    b.addEventListener("click", () => { state.tab = i; loadEditor(); });
    nav.appendChild(b);
  });
  if (state.topology !== null) return; // (a topology's programs are those its YAML names)
  // A pipeline is built here too: each program reads what the one before it emits.
  const add = document.createElement("button");
  add.textContent = "+ stage";
  add.className = "tab-action";
  add.title = "Add a program after the last one: a pipeline, each stage reading the events the one before emits";
  add.addEventListener("click", addStage);
  nav.appendChild(add);
  if (state.programs.length > 1) {
    const remove = document.createElement("button");
    remove.textContent = `− remove ${state.programs[state.tab].name}`;
    remove.className = "tab-action";
    remove.addEventListener("click", removeStage);
    nav.appendChild(remove);
  }
}

function addStage() {
  const taken = new Set(state.programs.map((p) => p.name));
  let n = state.programs.length + 1;
  while (taken.has(`stage${n}.es`)) n++;
  state.programs.push({ name: `stage${n}.es`, text: NEW_STAGE });
  state.tab = state.programs.length - 1;
  loadEditor();
  onProgramInput(state.programs[state.tab].text);
  programEditor.textarea.focus();
}

function removeStage() {
  const name = state.programs[state.tab].name;
  state.programs.splice(state.tab, 1);
  delete state.diagnostics[name];
  state.tab = Math.min(state.tab, state.programs.length - 1);
  loadEditor();
  onProgramInput(state.programs[state.tab].text);
}

// What "a new program" and "+ stage" start from: a program that runs, saying what its parts are
// (and draws no warning: one that never ended its instances met a newcomer with never-ends).
const NEW_PROGRAM = `// A program: the events it reads (in) and emits (out), each with its type; then a regular
// expression over events, with actions in { }. group(...) gives each key an instance of its own.
in {string who;} Ping group(Ping.who)
out {string who; long n;} Count

{ n = 0; }
( Ping() { n = n + 1; !>Count({who: group[0], n: n}); } )*
elapse[1 minute]()   // a minute without a Ping ends the key's instance (its next Ping starts over)
`;
const NEW_TRACE = `// A trace: a [date time], then the events at that time; [hh:mm:ss] moves the clock on.
[2026-01-01 09:00:00] Ping("ann") Ping("bob")
[09:00:05] Ping("ann")
`;
const NEW_STAGE = `// A stage of the pipeline: it reads what the stage before it emits (declare those events
// with in), and what it emits goes to the next stage, or to the outputs if it is the last.
`;

function loadEditor() {
  renderTabs();
  programEditor.isProgram = !editingTopology();
  programEditor.value = editingTopology() ? state.topology : state.programs[state.tab].text;
  decorateProgram();
}

const TOPOLOGY = "topology.yaml"; // the topology's diagnostics are kept under this name

// The extent underlined in YAML: the scalar starting there (up to a separator or a comment).
function yamlExtentAt(text, offset) {
  const m = /^[^\s,[\]{}#]+/.exec(text.slice(offset, offset + 400));
  return offset + (m ? m[0].length : 1);
}

function diagnosticMarks(text, diagnostics, extent) {
  return diagnostics.map((d) => {
    const at = offsetOf(text, d.line, d.col);
    return [at, extent(text, at), `diag-${d.severity}`, `${d.severity}: ${d.message}${d.hint ? "\nhint: " + d.hint : ""}`];
  });
}

function decorateProgram() {
  if (editingTopology()) {
    programEditor.decorate(diagnosticMarks(state.topology, state.diagnostics[TOPOLOGY] || [], yamlExtentAt));
    renderDiagnostics();
    return;
  }
  const prog = state.programs[state.tab];
  const text = prog.text;
  const decorations = diagnosticMarks(text, state.diagnostics[prog.name] || [], extentAt);
  for (const m of waitingMarkers()) {
    const at = offsetOf(text, m.line, m.col);
    decorations.push([at, at + m.text.length, "waiting", `the followed key waits for ${m.text} (${m.line}:${m.col})`]);
  }
  programEditor.decorate(decorations);
  renderDiagnostics();
}

function renderDiagnostics() {
  const ul = $("#diagnostics");
  // (rebuilt at each check and step: a keyboard on the n-th message stays on the n-th)
  const focused = [...ul.children].indexOf(document.activeElement);
  ul.innerHTML = "";
  let count = 0;
  const files = state.programs.map((p) => p.name).concat(state.topology !== null ? [TOPOLOGY] : []);
  files.forEach((name, i) => {
    for (const d of state.diagnostics[name] || []) {
      count++;
      const li = document.createElement("li");
      li.className = `diag-${d.severity}`;
      const code = d.code ? ` [${d.code}]` : "";
      li.textContent = `${name}:${d.line}:${d.col}: ${d.severity}: ${d.message}${code}${d.hint ? " (hint: " + d.hint + ")" : ""}`;
      li.tabIndex = 0;
      li.addEventListener("click", () => { state.tab = i; loadEditor(); programEditor.goTo(d.line, d.col); });
      ul.appendChild(li);
    }
  });
  if (!count) {
    const li = document.createElement("li");
    li.className = "ok";
    li.textContent = "no errors or warnings";
    ul.appendChild(li);
  }
  if (focused >= 0) (ul.children[focused] || ul.lastElementChild)?.focus({ preventScroll: true });
}

let checkTimer = null;
let checkSeq = 0;

function scheduleCheck() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(check, CHECK_DELAY);
}

async function check() {
  const seq = ++checkSeq;
  const version = state.editVersion;
  const answer = await post("/api/check", { programs: state.programs, topology: state.topology });
  if (seq !== checkSeq) return; // a later check was sent: its answer counts
  const told = $("#run-error");
  if (answer.error) {
    told.textContent = answer.error;
    told.dataset.unreachable = answer.unreachable ? "1" : "";
    return;
  }
  if (told.dataset.unreachable) { told.textContent = ""; told.dataset.unreachable = ""; } // it answers again
  state.diagnostics = {};
  for (const p of answer.programs) state.diagnostics[p.name] = p.diagnostics;
  if (answer.topology) state.diagnostics[TOPOLOGY] = answer.topology.diagnostics;
  decorateProgram();
  document.body.dataset.checked = String(version);
}

// What is shown is the run of the text as it was: say so once the text differs.
function markStale() {
  const ran = state.result && state.ran;
  $("#stale").hidden = !ran || (ran.trace === state.trace && ran.topology === state.topology
    && ran.programs === JSON.stringify(state.programs));
}

function onProgramInput(text) {
  if (editingTopology()) state.topology = text;
  else state.programs[state.tab].text = text;
  state.editVersion++;
  document.body.dataset.edited = String(state.editVersion);
  scheduleCheck();
  saveAddress();
  markStale();
}

function onTraceInput(text) {
  state.trace = text;
  traceEditor.decorate([]);
  saveAddress();
  markStale();
}

// ---------------------------------------------------------------------------------------------
// The page address: program, trace and topology, so that a link reproduces a run

function encodeState() {
  // (e: the example the work began from, so that the menu names it again after a reload)
  const json = JSON.stringify({ p: state.programs, t: state.trace, y: state.topology, e: state.example || undefined });
  const bytes = new TextEncoder().encode(json);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeState(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  const obj = JSON.parse(new TextDecoder().decode(bytes));
  return { programs: obj.p, trace: obj.t, topology: obj.y ?? null, id: obj.e };
}

// Chromium does not load an address over 2 MB: past this many characters the address carries
// nothing, and reloading the tab takes its work from the tab's session storage instead (which
// also holds the last edit when the tab is reloaded before the address caught up with it).
const ADDRESS_LIMIT = 1500000;
const KEPT = "eventscript-playground"; // the session storage item: this tab's programs and trace

let addressTimer = null;
function saveAddress() {
  clearTimeout(addressTimer);
  addressTimer = setTimeout(saveNow, 300);
}

function saveNow() {
  clearTimeout(addressTimer);
  addressTimer = null;
  const encoded = encodeState();
  const inAddress = encoded.length + 3 <= ADDRESS_LIMIT;
  history.replaceState(null, "", inAddress ? "#s=" + encoded : location.pathname + location.search);
  let kept = true;
  try { sessionStorage.setItem(KEPT, encoded); } catch { kept = false; }
  try { if (!kept) sessionStorage.removeItem(KEPT); } catch { /* storage refused altogether */ }
  $("#keeping").textContent = inAddress ? (kept ? "" : "this tab's storage is refused: reloading keeps what the address holds")
    : kept ? `the programs and trace are too long for the page address (${Math.round(encoded.length / 1e6 * 10) / 10} MB encoded, `
      + `over ${ADDRESS_LIMIT / 1e6} MB): reloading this tab keeps them, a link to the page does not; "Save as test case" writes them to a folder`
    : `the programs and trace are too long to keep (${Math.round(encoded.length / 1e6 * 10) / 10} MB encoded): `
      + `a reload loses them; "Save as test case" writes them to a folder`;
}

// What the tab opens with: on a reload, what the tab held (its storage has the last edit, which
// the address may not: it is written 300 ms after typing, and not at all past ADDRESS_LIMIT);
// else a link's content; else nothing (the server's initial files, or the doors example).
function addressed() {
  const reloaded = performance.getEntriesByType("navigation")[0]?.type === "reload";
  let kept = null;
  try { kept = reloaded ? sessionStorage.getItem(KEPT) : null; } catch { /* storage refused */ }
  if (kept) {
    try { return decodeState(kept); } catch { /* written by another version of the page */ }
  }
  return linked();
}

function linked() {
  const hash = location.hash.startsWith("#s=") ? location.hash.slice(3) : "";
  if (!hash) return null;
  try { return decodeState(hash); } catch (err) {
    $("#run-error").textContent = "the page address holds no readable program: " + err;
    return null;
  }
}

// A link pasted into this tab's address bar changes only the hash (no reload): open it.
function onHashChange() {
  const content = linked();
  if (content && location.hash !== "#s=" + encodeState()) open(content);
}

function open(content) {
  state.programs = content.programs && content.programs.length ? content.programs : [{ name: "program.es", text: "" }];
  state.topology = content.topology ?? null;
  state.trace = content.trace ?? "";
  state.example = content.id ?? "";
  $("#examples").value = state.example;
  state.tab = 0;
  state.diagnostics = {};
  state.result = null;
  traceEditor.value = state.trace;
  loadEditor();
  clearRun();
  state.editVersion++;
  document.body.dataset.edited = String(state.editVersion);
  check();
  saveNow(); // at once: the note on what a reload keeps is shown with what it is about
}

// ---------------------------------------------------------------------------------------------
// Running

function clearRun() {
  state.result = null;
  state.tops = [];
  state.position = 0;
  for (const sel of ["#keys tbody", "#timeline tbody", "#outputs tbody", "#flows tbody"]) $(sel).innerHTML = "";
  // the tables' captions too: a run that failed showed "of key [...]" and "1 of 1 events" over empty tables
  for (const sel of ["#timeline-key", "#outputs-count"]) $(sel).textContent = "";
  $("#outputs").closest(".table-box").scrollTop = 0;
  $("#flows-box").hidden = true;
  $("#automaton").innerHTML = "";
  $("#stage-tabs").innerHTML = "";
  $("#position").textContent = "Run (Ctrl-Enter) runs the trace through the program: its outputs, "
    + "each key's state and every step show here.";
  $("#stale").hidden = true;
  $("#run-summary").hidden = true;
  $("#pipeline-box").hidden = true;
  $("#run-error").textContent = "";
  $("#slider").max = "0";
}

async function run() {
  const started = performance.now();
  $("#run-error").textContent = "running…";
  const answer = await post("/api/run", request());
  document.body.dataset.fetched = String(Math.round(performance.now() - started));
  const keptKey = state.selectedKey;
  clearRun();
  if (answer.programs) {
    for (const p of answer.programs) state.diagnostics[p.name] = p.diagnostics;
    decorateProgram();
  }
  if (answer.error && !answer.steps) {
    $("#run-error").textContent = answer.error;
    if (answer.trace_error) {
      const at = offsetOf(state.trace, answer.trace_error.line, answer.trace_error.col);
      traceEditor.decorate([[at, extentAt(state.trace, at), "diag-error", answer.trace_error.message]]);
    }
    document.body.dataset.ran = "error";
    return;
  }
  for (const s of answer.steps) s.keyId = s.after ? JSON.stringify(s.after.key) : null;
  state.result = answer;
  state.ranPrograms = JSON.stringify(state.programs);
  state.ran = { programs: state.ranPrograms, trace: state.trace, topology: state.topology };
  state.folded = null;
  state.tops = answer.steps.filter((s) => s.parent === null).map((s) => s.i);
  state.stage = 0;
  state.selectedKey = keptKey;
  $("#slider").max = String(state.tops.length);
  renderStageTabs();
  if (answer.pipeline) {
    $("#pipeline-box").hidden = false;
    $("#pipeline").innerHTML = answer.pipeline.svg || `<pre>${esc(answer.pipeline.dot)}</pre>`;
  }
  moveTo(state.tops.length);
  traceEditor.decorate(refusedInTrace(answer.outputs).concat(unreadInTrace(answer.trace_warnings || [])));
  // a run stopped by a limit: what it did up to there is shown, and why it stopped
  if (answer.error) $("#run-error").textContent = answer.error;
  summarize(answer);
  document.body.dataset.ran = String(Math.round(performance.now() - started));
}

// Under the trace, where the eye is after Run: what the run did, and a link to its outputs
// (on a laptop's screen the Outputs table is below the drawing, out of view).
function summarize(answer) {
  const errors = answer.outputs.filter((o) => o.event === "$error").length;
  const outputs = answer.outputs.length - errors;
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const box = $("#run-summary");
  box.innerHTML = `${answer.error ? "Stopped" : "Ran"} ${plural(state.tops.length, "step")}: `
    + `<a href="#outputs-title">${plural(outputs, "output")}${errors ? ` and ${plural(errors, "$error event")}` : ", no $error"}</a>.`;
  box.querySelector("a").addEventListener("click", (e) => { // (the address keeps the work, not "#outputs-title")
    e.preventDefault();
    $("#outputs-title").scrollIntoView({ block: "start" });
  });
  box.hidden = false;
}

// Trace values the run refused with an $error that places them ("trace:2:12: Opened: door:
// expected a string ...": a value not of the declared type, or a field the type does not declare)
// are underlined where they are, as a mistake in the program is; else only a row of the outputs
// said so. (Where the message places an event, its name and parentheses are underlined.)
// The trace's events no program reads (a misspelt name: its $error 1 says neither where nor what
// was meant), underlined as warnings with the name probably meant, as 'eventscript test' warns.
function unreadInTrace(warnings) {
  return warnings.map((w) => {
    const at = offsetOf(state.trace, w.line, w.col);
    const name = extentAt(state.trace, at);
    return [at, state.trace[name] === "(" ? extentAt(state.trace, name) : name, "diag-warning", `warning: ${w.message}`];
  });
}

const REFUSED_MARKS = 1000;
function refusedInTrace(outputs) {
  const marks = [];
  let starts = null;
  for (const o of outputs) {
    const m = o.event === "$error" && /^trace:(\d+):(\d+): ([\s\S]*)$/.exec(o.value?.message ?? "");
    if (!m) continue;
    starts = starts || lineStarts(state.trace);
    const at = Math.min(state.trace.length, (starts[Number(m[1]) - 1] ?? state.trace.length) + Number(m[2]) - 1);
    const name = extentAt(state.trace, at); // the value (or an event's name, and its parentheses)
    const end = state.trace[name] === "(" ? extentAt(state.trace, name) : name;
    marks.push([at, end, "diag-error", `$error ${o.value.code}: ${m[3]}`]);
    if (marks.length >= REFUSED_MARKS) break;
  }
  return marks;
}

function renderStageTabs() {
  const nav = $("#stage-tabs");
  nav.innerHTML = "";
  state.result.stages.forEach((st, i) => {
    const b = document.createElement("button");
    b.textContent = st.name;
    b.className = i === state.stage ? "active" : "";
    b.addEventListener("click", () => { state.stage = i; state.selectedKey = null; renderStageTabs(); renderAt(); });
    nav.appendChild(b);
  });
  drawAutomaton();
}

// Shrunk to the box, a large automaton (dfa-blowup-k20: 18,000 points wide) is a grey line;
// past this shrinking it is drawn at READ_SCALE (labels of about 11 px) in its scrolling box, the
// followed key's state scrolled into view, and a button switches between the two.
const FIT_SCALE = 0.5;
const READ_SCALE = 0.6;

function drawAutomaton() {
  const st = state.result.stages[state.stage];
  const a = st.automaton;
  const box = $("#automaton");
  box.innerHTML = a.svg || `<pre>${esc(a.dot)}</pre>`;
  const svg = box.querySelector("svg");
  const width = svg ? svg.viewBox.baseVal.width * 4 / 3 : 0; // points to CSS pixels
  const large = width * FIT_SCALE > box.clientWidth;
  box.classList.toggle("full", large);
  const nav = $("#stage-tabs");
  if (!large) return;
  svg.style.width = `${Math.round(width * READ_SCALE)}px`; // (fitted, max-width shrinks it to the box)
  const toggle = document.createElement("button");
  toggle.className = "drawing-size";
  toggle.textContent = "fit the drawing to the box";
  toggle.title = "The automaton is large: it is drawn large enough to read, scrolled to the followed key's state";
  toggle.addEventListener("click", () => {
    const full = box.classList.toggle("full");
    toggle.textContent = full ? "fit the drawing to the box" : "draw it large";
    if (full) scrollToFollowed();
  });
  nav.appendChild(toggle);
}

function scrollToFollowed() {
  const box = $("#automaton");
  // (else the drawing's label: a lazy DFA's says that the states drawn are only the first ones)
  const node = box.querySelector("g.node.selected") || box.querySelector("g.node.current")
    || box.querySelector("svg g.graph > text");
  if (!box.classList.contains("full") || !node) return;
  const r = node.getBoundingClientRect(), b = box.getBoundingClientRect();
  box.scrollLeft += r.left - b.left - Math.max(0, (b.width - r.width) / 2); // (a label wider than the box: its start)
  box.scrollTop += r.top - b.top - (b.height - r.height) / 2;
}

// ---------------------------------------------------------------------------------------------
// Stepping: the instances after `position` top-level steps, folded from the steps' after-states

function limitStep() {
  // steps with an index below this have happened (a top-level step and the steps nested in it)
  return state.position < state.tops.length ? state.tops[state.position] : state.result.steps.length;
}

function instancesAt(stage) {
  const end = limitStep();
  const f = state.folded;
  if (f && f.result === state.result && f.stage === stage && f.end === end) return f.keys;
  const keys = new Map();
  for (const s of state.result.steps) {
    if (s.i >= end) break;
    if (s.stage === stage && s.after) keys.set(s.keyId, s.after);
  }
  state.folded = { result: state.result, stage, end, keys };
  return keys;
}

function moveTo(position) {
  if (!state.result) return;
  state.position = Math.max(0, Math.min(position, state.tops.length));
  $("#slider").value = String(state.position);
  renderAt();
}

function waitingMarkers() {
  // (none once the program is edited after the run: their positions would point elsewhere)
  if (!state.result || state.selectedKey === null || state.ranPrograms !== JSON.stringify(state.programs)) return [];
  const stageIndex = state.result.stages.findIndex((s) => s.source === state.programs[state.tab]?.name);
  const si = stageIndex >= 0 ? stageIndex : state.stage;
  const view = instancesAt(si).get(state.selectedKey);
  if (!view || view.ended) return [];
  const info = state.result.stages[si].states[JSON.stringify(view.state)];
  return info ? info.waiting : [];
}

function stateText(stage, view) {
  if (view.ended) return "ended";
  return `${JSON.stringify(view.state)}${stage.states[JSON.stringify(view.state)]?.accepting ? " (accepting)" : ""}`;
}

function waitingText(stage, view) {
  if (view.ended) return "";
  const info = stage.states[JSON.stringify(view.state)];
  return info ? info.waiting.map((m) => `${m.text}@${m.line}:${m.col}`).join(", ") : "";
}

function varsText(stage, view) {
  return stage.variables.map((v, i) => `${v.name} = ${show(view.vars[i])}`).join(", ");
}

function timerText(stage, view) {
  if (!view.timer || view.ended) return "";
  const [deadline, sym] = view.timer;
  const info = stage.timers[String(sym)];
  const when = fmtTime(deadline);
  return `${info?.marker ? info.marker.text + "@" + info.marker.line + ":" + info.marker.col : "timer"} due ${when}`;
}

function renderAt() {
  const res = state.result;
  if (!res) return;
  const stage = res.stages[state.stage];
  const end = limitStep();
  const instances = instancesAt(state.stage);
  // the position
  const last = state.position > 0 ? res.steps[state.tops[state.position - 1]] : null;
  $("#position").textContent = last
    ? `after step ${state.position} of ${state.tops.length}: ${fmtTime(last.t)} ${describe(last)}`
    : `before the first event (${state.tops.length} steps)`;
  if (state.selectedKey === null && instances.size) state.selectedKey = [...instances.keys()][0];
  // keys (the first KEY_ROWS, and the followed one)
  const rows = [];
  let listed = 0;
  for (const [key, view] of instances) {
    if (++listed > KEY_ROWS && key !== state.selectedKey) continue;
    const cls = [key === state.selectedKey ? "selected" : "", view.ended ? "ended" : ""].join(" ");
    rows.push(`<tr class="${cls}" data-key="${esc(key)}" tabindex="0"><td>${esc(view.key === null ? "(the instance)" : show(view.key))}</td>`
      + `<td class="state">${esc(stateText(stage, view))}</td><td>${esc(waitingText(stage, view))}</td>`
      + `<td>${esc(varsText(stage, view))}</td><td>${esc(timerText(stage, view))}</td></tr>`);
  }
  if (listed > KEY_ROWS) rows.push(`<tr><td colspan="5">… ${listed - KEY_ROWS} more keys (follow one from the outputs or the timeline)</td></tr>`);
  const focusedKey = document.activeElement?.closest?.("#keys tr[data-key]")?.dataset.key;
  $("#keys tbody").innerHTML = rows.join("");
  if (focusedKey !== undefined) { // (the rows are built anew: keep a keyboard's place in them)
    [...$("#keys tbody").querySelectorAll("tr[data-key]")].find((tr) => tr.dataset.key === focusedKey)?.focus();
  }
  // the automaton: the states keys are in
  const svg = $("#automaton svg");
  if (svg) {
    const nodeOf = stage.automaton.nodes;
    const current = new Map();
    for (const [key, view] of instances) if (!view.ended) {
      const node = nodeOf[JSON.stringify(view.state)];
      if (node) current.set(node, (current.get(node) || 0) + 1);
    }
    const chosen = instances.get(state.selectedKey);
    const chosenNode = chosen && !chosen.ended ? nodeOf[JSON.stringify(chosen.state)] : null;
    for (const g of svg.querySelectorAll("g.node")) {
      const title = g.querySelector("title")?.textContent;
      g.classList.toggle("current", current.has(title));
      g.classList.toggle("selected", title === chosenNode);
      let tip = g.querySelector("title");
      if (tip && current.has(title)) tip.textContent = title; // keep Graphviz's title for lookups
    }
  }
  scrollToFollowed();
  renderTimeline(stage, end);
  renderOutputs(end);
  renderFlows(end);
  decorateProgram();
}

function describe(step) {
  const key = step.key ? ` key ${JSON.stringify(step.key)}` : "";
  if (step.kind === "timer") return `timer ${step.name}${key}`;
  if (step.kind === "start") return "start (initial actions)";
  return `${step.name}(${JSON.stringify(step.value)})${key}`;
}

function renderTimeline(stage, end) {
  const res = state.result;
  // (an ungrouped program's one instance has the key null: the keys table calls it "the instance")
  $("#timeline-key").textContent = state.selectedKey === "null" ? "of the instance"
    : state.selectedKey ? `of key ${state.selectedKey}` : "";
  const rows = [];
  let shown = 0;
  for (const s of res.steps) {
    if (s.stage !== state.stage || s.keyId !== state.selectedKey) continue;
    if (++shown > 2000) { rows.push(`<tr><td colspan="8">… more steps: step through time to see them</td></tr>`); break; }
    const acts = s.actions.map((u) => stage.units[u]).map((a) => `${a.text} @${a.line}:${a.col}`)
      .concat(s.timers.map((t) => `timer ${t.change}: ${t.marker} due ${fmtTime(t.deadline)}`))
      .concat(s.symbol === null && s.kind === "event" ? ["no transition: an unexpected event"] : []);
    const cls = s.i >= end ? "future" : (s.i === state.tops[state.position - 1] ? "current" : "");
    rows.push(`<tr class="${cls}"><td>${s.i}</td><td>${esc(fmtTime(s.t))}</td><td>${esc(describe(s))}</td>`
      + `<td>${esc(stateText(stage, s.after))}</td><td>${esc(waitingText(stage, s.after))}</td>`
      + `<td>${esc(varsText(stage, s.after))}</td><td>${esc(timerText(stage, s.after))}</td><td>${esc(acts.join("; "))}</td></tr>`);
  }
  $("#timeline tbody").innerHTML = rows.join("");
}

// The events a stage emitted that the next stage (or, in a topology, a reader) took: steps
// nested in a step of another stage.
function renderFlows(end) {
  const res = state.result;
  $("#flows-box").hidden = res.stages.length < 2;
  if (res.stages.length < 2) return;
  const fk = $("#filter-key").value.trim().toLowerCase();
  const fe = $("#filter-event").value.trim().toLowerCase();
  const rows = [];
  for (const s of res.steps) {
    if (s.parent === null || res.steps[s.parent].stage === s.stage || s.kind !== "event") continue;
    if (fk && !(s.keyId ?? "").toLowerCase().includes(fk)) continue;
    if (fe && !s.name.toLowerCase().includes(fe)) continue;
    if (rows.length >= OUTPUT_ROWS) break;
    const from = res.stages[res.steps[s.parent].stage].name, to = res.stages[s.stage].name;
    rows.push(`<tr class="${s.i >= end ? "future" : ""}"><td>${s.i}</td><td>${esc(fmtTime(s.t))}</td><td>${esc(from)} → ${esc(to)}</td>`
      + `<td>${esc(s.name)}</td><td>${esc(JSON.stringify(s.value))}</td><td>${esc(s.key ? JSON.stringify(s.key) : "")}</td></tr>`);
  }
  $("#flows tbody").innerHTML = rows.join("");
}

const OUTPUT_ROWS = 1000; // rows of the "between stages" table
const KEY_ROWS = 300;

// The outputs table is virtualised: every output matching the filters is in it, but only the
// rows in view (and OUTPUT_MARGIN either side) are built, between two spacer rows that keep the
// scroll height; so 10,000 outputs draw as fast as 50. Rows have one height (the cells do not
// wrap; a cell's title holds its whole text).
const OUTPUT_MARGIN = 20;
const outputsView = { rows: [], key: null, end: 0, rowHeight: 22 };

function matchingOutputs() {
  const fk = $("#filter-key").value.trim().toLowerCase();
  const fe = $("#filter-event").value.trim().toLowerCase();
  const key = JSON.stringify([fk, fe]);
  if (outputsView.result === state.result && outputsView.key === key) return outputsView.rows;
  const rows = [];
  state.result.outputs.forEach((o, n) => {
    if (fk && !JSON.stringify(o.key ?? "").toLowerCase().includes(fk)) return;
    if (fe && !o.event.toLowerCase().includes(fe)) return;
    rows.push(n);
  });
  Object.assign(outputsView, { result: state.result, key, rows });
  return rows;
}

function renderOutputs(end) {
  const rows = matchingOutputs();
  outputsView.end = end;
  $("#outputs-count").textContent = `${rows.length} of ${state.result.outputs.length} events`;
  drawOutputRows();
}

function outputRow(n, end) {
  const o = state.result.outputs[n];
  const cls = [o.event === "$error" ? "error" : "", o.step !== undefined && o.step >= end ? "future" : ""].join(" ");
  const cells = [String(n), o.time, o.event, o.key ? JSON.stringify(o.key) : "", JSON.stringify(o.value),
    (o.program ?? "") + (o.topic ? " → " + o.topic : "")];
  return `<tr class="${cls}" data-n="${n}" tabindex="0">${cells.map((c) => `<td title="${esc(c)}">${esc(c)}</td>`).join("")}</tr>`;
}

function drawOutputRows() {
  if (!state.result) return;
  const box = $("#outputs").closest(".table-box");
  const rows = outputsView.rows, h = outputsView.rowHeight;
  const first = Math.min(rows.length, Math.max(0, Math.floor(box.scrollTop / h) - OUTPUT_MARGIN));
  const last = Math.min(rows.length, first + Math.ceil(box.clientHeight / h) + 2 * OUTPUT_MARGIN);
  const spacer = (count) => (count > 0 ? `<tr class="spacer" style="height:${count * h}px"><td colspan="6"></td></tr>` : "");
  const html = [spacer(first)];
  for (let i = first; i < last; i++) html.push(outputRow(rows[i], outputsView.end));
  html.push(spacer(rows.length - last));
  const body = $("#outputs tbody");
  const focused = document.activeElement?.closest?.("#outputs tr[data-n]")?.dataset.n;
  body.innerHTML = html.join("");
  if (focused !== undefined) body.querySelector(`tr[data-n="${focused}"]`)?.focus({ preventScroll: true });
  const drawn = body.querySelector("tr[data-n]");
  const measured = drawn ? drawn.getBoundingClientRect().height : h;
  if (measured > 0 && Math.abs(measured - h) > 0.5) { // the font gave rows another height: draw again
    outputsView.rowHeight = measured;
    drawOutputRows();
  }
}

let outputsFrame = 0;
function onOutputsScroll() {
  if (outputsFrame) return;
  outputsFrame = requestAnimationFrame(() => { outputsFrame = 0; drawOutputRows(); });
}

// An output clicked: go to just after the step that emitted it, following its key there.
function followOutput(o) {
  if (o.step === undefined) return;
  let step = state.result.steps[o.step];
  while (step.parent !== null) step = state.result.steps[step.parent];
  const emitting = state.result.steps[o.step];
  state.stage = emitting.stage;
  state.selectedKey = emitting.keyId;
  renderStageTabs();
  moveTo(state.tops.indexOf(step.i) + 1);
}

// ---------------------------------------------------------------------------------------------
// Keeping: examples and test cases

async function loadExamples() {
  const list = await (await fetch("/api/examples")).json();
  const select = $("#examples");
  for (const e of list) {
    const o = document.createElement("option");
    o.value = e.id;
    o.textContent = e.title;
    select.appendChild(o);
  }
}

async function openExample(id) {
  if (!id) return;
  if (id === "new") {
    open({ programs: [{ name: "program.es", text: NEW_PROGRAM }], trace: NEW_TRACE, id });
    return;
  }
  const ex = await (await fetch("/api/examples/" + encodeURIComponent(id).replace(/%2F/g, "/"))).json();
  if (ex.error) { $("#run-error").textContent = ex.error; return; }
  open(ex);
}

async function saveCase() {
  const name = $("#case-name").value.trim();
  const answer = await post("/api/case", { ...request(), name });
  let told = answer.error;
  if (!told) {
    told = `saved ${answer.path}: ${answer.files.join(", ")}`;
    // a conformance case holds one program or a chain: a topology is saved as topologies/ are
    if (answer.kind === "topology") told += ` (a topology test, not a conformance case; run it in that folder: ${answer.command})`;
    else told += ` (a conformance case; run it in that folder: ${answer.command})`;
  }
  $("#case-result").textContent = told;
  $("#case-result").dataset.path = answer.path || "";
}

// ---------------------------------------------------------------------------------------------

async function start() {
  programEditor = new Editor($("#program-editor"), true, onProgramInput);
  traceEditor = new Editor($("#trace-editor"), false, onTraceInput);
  $("#run").addEventListener("click", run);
  $("#outputs").closest(".table-box").addEventListener("scroll", onOutputsScroll);
  $("#outputs tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-n]");
    if (tr) followOutput(state.result.outputs[Number(tr.dataset.n)]);
  });
  $("#keys tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-key]");
    if (tr) { state.selectedKey = tr.dataset.key; renderAt(); }
  });
  $("#save-case").addEventListener("click", saveCase);
  $("#examples").addEventListener("change", (e) => openExample(e.target.value));
  $("#first").addEventListener("click", () => moveTo(0));
  $("#back").addEventListener("click", () => moveTo(state.position - 1));
  $("#forward").addEventListener("click", () => moveTo(state.position + 1));
  $("#last").addEventListener("click", () => moveTo(state.tops.length));
  $("#slider").addEventListener("input", (e) => moveTo(Number(e.target.value)));
  for (const f of ["#filter-key", "#filter-event"]) {
    $(f).addEventListener("input", () => {
      $("#outputs").closest(".table-box").scrollTop = 0;
      if (state.result) { renderOutputs(limitStep()); renderFlows(limitStep()); }
    });
  }
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); return; }
    if (e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLInputElement) return;
    // a diagnostic, a key or an output reached by Tab: Enter or Space does what a click does
    if ((e.key === "Enter" || e.key === " ") && e.target.matches?.("li[tabindex], tr[tabindex]")) {
      e.preventDefault();
      e.target.click();
      return;
    }
    if (e.key === "ArrowRight") moveTo(state.position + 1);
    else if (e.key === "ArrowLeft") moveTo(state.position - 1);
    else if (e.key === "Home") moveTo(0);
    else if (e.key === "End") moveTo(state.tops.length);
  });
  window.addEventListener("pagehide", () => { if (addressTimer !== null) saveNow(); });
  window.addEventListener("hashchange", onHashChange);
  await loadExamples();
  let content = addressed();
  if (!content) {
    const initial = await (await fetch("/api/initial")).json();
    if (initial.programs) content = initial;
  }
  if (content) open(content);
  else await openExample("topologies/doors");
  document.body.dataset.ready = "1";
}

start();
