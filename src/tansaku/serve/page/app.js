// The tansaku search page: calls the server's JSON endpoints only (no search rule lives here).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const box = $("q"), mode = $("mode"), level = $("level"), list = $("results"), status = $("status");
  const passage = $("passage"), home = passage.parentNode;
  const STEP = 20, TURNS_STEP = 3;
  let composing = false, timer = 0, selected = -1, results = [], serial = 0, opened = null;
  const kinds = {}; // collection name -> type (files, claude, codex), from /status
  const chosen = new Set(); // collection chips that are on; none on = the default collections

  function headers(json) {
    const h = json ? { "Content-Type": "application/json" } : {};
    const token = sessionStorage.getItem("tansaku-token");
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }
  async function call(method, path, body) {
    const reply = await fetch(path, { method, headers: headers(!!body), body: body && JSON.stringify(body) });
    if (reply.status === 401) { $("token-box").hidden = false; }
    return { status: reply.status, data: await reply.json() };
  }
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  // A server sentence with its `commands` as code a person can select and copy.
  function sentence(tag, cls, text) {
    const node = el(tag, cls);
    String(text).split("`").forEach((part, k) => node.append(k % 2 ? el("code", "", part) : part));
    return node;
  }
  // The typed words (and each run of Han characters) highlighted in the snippet text.
  function terms(query) {
    const words = query.split(/\s+/).filter(Boolean);
    const han = query.match(/\p{Script=Han}+/gu) || [];
    return [...new Set([...words, ...han])].map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  }
  function highlighted(text, pattern) {
    const frag = document.createDocumentFragment();
    if (!pattern) { frag.append(text); return frag; }
    let last = 0;
    for (const m of text.matchAll(pattern)) {
      frag.append(text.slice(last, m.index), el("mark", "", m[0]));
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    return frag;
  }
  function showError(err) {
    status.replaceChildren();
    const p = el("div", "error", err.message || err.code);
    if (err.hint) { p.append(" — "); p.append(el("code", "", err.hint)); }
    status.append(p);
  }
  const hasTranscripts = () => Object.values(kinds).some((t) => t !== "files");
  // The request's filters, named as the CLI's options (-c, --level, --role, --since, --until).
  function filters() {
    const body = {};
    if (chosen.size) body.collections = [...chosen];
    if (!hasTranscripts()) return body;
    if (level.value) body.level = level.value;
    const roles = [...document.querySelectorAll("#roles [aria-pressed=true]")].map((b) => b.dataset.role);
    if (roles.length) body.roles = roles;
    if ($("since").value) body.since = $("since").value;
    if ($("until").value) body.until = $("until").value;
    return body;
  }
  async function run() {
    const query = box.value.trim();
    const mine = ++serial;
    if (!query) { list.replaceChildren(); return; }
    const body = { query, n: 20, ...filters() };
    if (mode.value === "query") body.explain = true;
    const { status: code, data } = await call("POST", "/" + mode.value, body);
    if (mine !== serial) return;
    if (code !== 200) { list.replaceChildren(); showError(data.error || {}); return; }
    const count = data.total ?? data.results.length;
    const took = data.took_ms == null ? "?" : Math.round(data.took_ms);
    status.replaceChildren(`${count} result${count === 1 ? "" : "s"} in ${took} ms (${data.mode})`);
    for (const w of data.warnings || []) status.append(sentence("div", "warning", `${w.code}: ${w.message}`));
    render(data.results, query);
    requestAnimationFrame(() => window.dispatchEvent(new CustomEvent("tansaku:painted")));
  }
  function transcriptLine(t) {
    const bits = [t.level, t.role, t.timestamp && t.timestamp.slice(0, 16).replace("T", " ")];
    if (t.matches > 1) bits.push(`${t.matches} matching turns`);
    if (t.session_title) bits.push(t.session_title);
    return bits.filter(Boolean).join(" · ");
  }
  function render(items, query) {
    results = items; selected = -1;
    passage.hidden = true; home.append(passage); // out of the list before the list is replaced
    const t = terms(query);
    const pattern = t.length ? new RegExp(t.join("|"), "giu") : null;
    const nodes = items.map((r, i) => {
      const li = el("li");
      li.append(el("div", "title", r.title || r.path || r.virtual_path));
      const meta = el("div", "path", `${r.virtual_path || ""} ${r.docid || ""} score ${r.score}`);
      if (r.stale) meta.append(el("span", "stale", " stale"));
      li.append(meta);
      if (r.transcript) li.append(el("div", "meta", transcriptLine(r.transcript)));
      if (r.contexts && r.contexts.length) li.append(el("div", "meta", r.contexts.join(" · ")));
      const snip = r.snippet;
      if (snip && snip.lines) {
        const pre = el("pre", "snippet");
        snip.lines.forEach((line, k) => {
          pre.append(`${snip.start_line + k}: `, highlighted(line, pattern), "\n");
        });
        li.append(pre);
      }
      if (r.explain) {
        const d = el("details"); d.append(el("summary", "", "why this result"), el("pre", "", JSON.stringify(r.explain, null, 1)));
        li.append(d);
      }
      li.addEventListener("click", (e) => { if (!passage.contains(e.target)) open(i); });
      return li;
    });
    list.replaceChildren(...nodes);
  }
  async function open(i) {
    const r = results[i];
    if (!r) return;
    const turn = r.transcript && r.transcript.line;
    const from = Math.max(1, turn || (r.snippet && r.snippet.start_line) || 1);
    // A transcript hit opens as its turns (get on SESSION.jsonl:LINE); a file as its lines.
    opened = { ref: r.virtual_path, from, count: STEP, session: !!turn, context: TURNS_STEP, reading: false };
    $("passage-path").textContent = r.virtual_path;
    list.children[i].append(passage); // opened in place, under its result
    passage.hidden = false;
    await loadPassage();
  }
  async function loadPassage() {
    const fields = { ref: opened.ref, from_line: opened.from };
    if (opened.session) fields.context = opened.context; else fields.max_lines = opened.count;
    const { status: code, data } = await call("GET", "/get?" + new URLSearchParams(fields));
    if (code !== 200) { showError(data.error || {}); return; }
    if (data.messages) { showTurns(data); return; }
    $("turns").hidden = true; $("passage-lines").hidden = false;
    $("passage-lines").textContent = data.lines.map((l, k) => `${data.from_line + k}: ${l}`).join("\n");
    $("more").textContent = "more lines";
    $("more").hidden = !data.truncated;
    $("whole").hidden = true;
  }
  function turnNode(m, focus) {
    const li = el("li", m.line === focus ? "turn focus" : "turn");
    const when = m.timestamp ? m.timestamp.slice(0, 19).replace("T", " ") : "";
    li.append(el("div", "meta", [`${m.line}:`, m.role, m.tool_name, when].filter(Boolean).join(" ")));
    li.append(el("pre", "", m.text));
    return li;
  }
  function showTurns(data) {
    opened.sessionId = data.session_id;
    $("passage-lines").hidden = true;
    const turns = $("turns");
    turns.replaceChildren(...data.messages.map((m) => turnNode(m, data.focus_line)));
    turns.hidden = false;
    for (const w of data.warnings || []) turns.append(sentence("li", "warning", `${w.code}: ${w.message}`));
    $("more").textContent = "more turns";
    $("more").hidden = data.messages.length >= data.total_turns;
    $("whole").hidden = false;
  }
  // The command that prints what the panel shows.
  function command() {
    if (opened.reading) return `tansaku session read ${opened.sessionId} --from-line ${opened.from}`;
    if (opened.session) return `tansaku get ${opened.ref} -C ${opened.context}`;
    return `tansaku get ${opened.ref}:${opened.from}`;
  }
  // The whole session from its first line, a page at a time (session read).
  async function readSession(fromLine) {
    const fields = { session: opened.sessionId, from_line: fromLine, limit: STEP };
    const { status: code, data } = await call("GET", "/session?" + new URLSearchParams(fields));
    if (code !== 200) { showError(data.error || {}); return; }
    if (!opened.reading) { opened.reading = true; opened.from = fromLine; $("turns").replaceChildren(); }
    $("turns").append(...data.messages.map((m) => turnNode(m, null)));
    opened.next = data.next_line;
    $("more").textContent = "next turns";
    $("more").hidden = !data.truncated;
  }
  function select(k) {
    const items = list.children;
    if (!items.length) return;
    selected = Math.max(0, Math.min(items.length - 1, k));
    [...items].forEach((li, j) => li.classList.toggle("selected", j === selected));
    items[selected].scrollIntoView({ block: "nearest" });
  }
  function schedule() {
    clearTimeout(timer);
    if (!composing) timer = setTimeout(run, 120);
  }
  function toggle(button) {
    const on = button.getAttribute("aria-pressed") !== "true";
    button.setAttribute("aria-pressed", String(on));
    return on;
  }
  function showCollections(collections) {
    const chips = collections.map((c) => {
      const name = c.collection.name;
      kinds[name] = c.collection.type || "files";
      const chip = el("button", "", `${name} ${c.documents}`);
      chip.type = "button";
      chip.setAttribute("aria-pressed", "false");
      chip.dataset.collection = name;
      if (!c.collection.include) chip.title = "excluded from searches unless chosen";
      chip.addEventListener("click", () => { toggle(chip) ? chosen.add(name) : chosen.delete(name); run(); });
      return chip;
    });
    $("chips").replaceChildren(...chips);
    $("transcript-filters").hidden = !hasTranscripts();
  }
  // The status bar: what the index holds and what is missing, each gap with the command that
  // fills it. The page only shows them: the server is read-only.
  function showStatus(data, models) {
    const bar = $("statusbar");
    const collections = data.collections || [];
    const docs = collections.reduce((n, c) => n + (c.documents || 0), 0);
    const vectors = collections.reduce((n, c) => n + (c.vectors || 0), 0);
    bar.replaceChildren(el("span", "", `${docs} documents in ${collections.length} collections, ${vectors} vectors`));
    for (const w of data.warnings || []) bar.append(sentence("span", "gap", w.message));
    for (const line of data.pending || []) bar.append(sentence("span", "gap", line));
    const embed = (models || []).find((m) => m.role === "embed");
    if (!vectors && collections.length && embed && embed.present) {
      bar.append(sentence("span", "gap", "no vectors yet: meaning and best search need `tansaku embed`"));
    }
    for (const m of models || []) {
      const item = m.present
        ? el("span", "model", `${m.role} model ✓`)
        : sentence("span", "gap model", `${m.role} model missing (${m.needed_by}): \`${m.fix}\``);
      item.dataset.role = m.role;
      bar.append(item);
    }
  }
  async function loadStatus() {
    const [s, m] = await Promise.all([call("GET", "/status"), call("GET", "/models")]);
    if (s.status !== 200) { if (s.data.error) showError(s.data.error); return; }
    showCollections(s.data.collections || []);
    showStatus(s.data, m.status === 200 ? m.data.models : []);
  }
  box.addEventListener("compositionstart", () => { composing = true; clearTimeout(timer); });
  box.addEventListener("compositionend", () => { composing = false; schedule(); });
  box.addEventListener("input", (e) => { if (!e.isComposing) schedule(); });
  box.addEventListener("keydown", (e) => {
    if (e.isComposing || composing) return; // Enter that confirms a candidate does not submit
    if (e.key === "ArrowDown") { e.preventDefault(); select(selected + 1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); select(selected - 1); }
    else if (e.key === "Enter") { e.preventDefault(); selected >= 0 ? open(selected) : run(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement !== box) { e.preventDefault(); box.focus(); }
    else if (e.key === "Escape") { passage.hidden = true; }
  });
  for (const control of [mode, level, $("since"), $("until")]) control.addEventListener("change", run);
  for (const b of document.querySelectorAll("#roles button")) b.addEventListener("click", () => { toggle(b); run(); });
  $("more").addEventListener("click", () => {
    if (opened.reading) { readSession(opened.next); return; }
    if (opened.session) opened.context += TURNS_STEP; else opened.count += STEP;
    loadPassage();
  });
  $("whole").addEventListener("click", () => { opened.reading = false; readSession(1); });
  $("close").addEventListener("click", () => { passage.hidden = true; });
  $("copy-path").addEventListener("click", () => navigator.clipboard.writeText(opened.ref));
  $("copy-get").addEventListener("click", () => navigator.clipboard.writeText(command()));
  $("token").addEventListener("change", (e) => { sessionStorage.setItem("tansaku-token", e.target.value); loadStatus(); run(); });
  loadStatus();
})();
