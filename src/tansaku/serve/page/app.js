// The tansaku search page: calls the server's JSON endpoints only (no search rule lives here).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const box = $("q"), mode = $("mode"), level = $("level"), list = $("results"), status = $("status");
  const STEP = 20;
  let composing = false, timer = 0, selected = -1, results = [], serial = 0, opened = null;

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
  async function run() {
    const query = box.value.trim();
    const mine = ++serial;
    if (!query) { list.replaceChildren(); return; }
    const body = { query, n: 20 };
    if (mode.value === "search" && level.value) body.level = level.value;
    if (mode.value === "query") body.explain = true;
    const { status: code, data } = await call("POST", "/" + mode.value, body);
    if (mine !== serial) return;
    if (code !== 200) { list.replaceChildren(); showError(data.error || {}); return; }
    const count = data.total ?? data.results.length;
    const took = data.took_ms == null ? "?" : Math.round(data.took_ms);
    status.textContent = `${count} result${count === 1 ? "" : "s"} in ${took} ms (${data.mode})`;
    render(data.results, query);
    requestAnimationFrame(() => window.dispatchEvent(new CustomEvent("tansaku:painted")));
  }
  function render(items, query) {
    results = items; selected = -1;
    const t = terms(query);
    const pattern = t.length ? new RegExp(t.join("|"), "giu") : null;
    const nodes = items.map((r, i) => {
      const li = el("li");
      li.append(el("div", "title", r.title || r.path || r.virtual_path));
      const meta = el("div", "path", `${r.virtual_path || ""} ${r.docid || ""} score ${r.score}`);
      if (r.stale) meta.append(el("span", "stale", " stale"));
      li.append(meta);
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
      li.addEventListener("click", () => open(i));
      return li;
    });
    list.replaceChildren(...nodes);
  }
  async function open(i) {
    const r = results[i];
    if (!r) return;
    const from = Math.max(1, (r.snippet && r.snippet.start_line) || 1);
    opened = { ref: r.virtual_path, from, count: STEP };
    $("passage-path").textContent = r.virtual_path;
    $("passage").hidden = false;
    await loadPassage();
  }
  async function loadPassage() {
    const q = new URLSearchParams({ ref: opened.ref, from_line: opened.from, max_lines: opened.count });
    const { status: code, data } = await call("GET", "/get?" + q);
    if (code !== 200) { showError(data.error || {}); return; }
    $("passage-lines").textContent = data.lines.map((l, k) => `${data.from_line + k}: ${l}`).join("\n");
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
    else if (e.key === "Escape") { $("passage").hidden = true; }
  });
  mode.addEventListener("change", run);
  level.addEventListener("change", run);
  $("more").addEventListener("click", () => { opened.count += STEP; loadPassage(); });
  $("close").addEventListener("click", () => { $("passage").hidden = true; });
  $("copy-path").addEventListener("click", () => navigator.clipboard.writeText(opened.ref));
  $("copy-get").addEventListener("click", () => navigator.clipboard.writeText(`tansaku get ${opened.ref}`));
  $("token").addEventListener("change", (e) => { sessionStorage.setItem("tansaku-token", e.target.value); run(); });
  call("GET", "/status").then(({ status: code, data }) => {
    if (code !== 200) { if (data.error) showError(data.error); return; }
    const docs = (data.collections || []).reduce((n, c) => n + (c.documents || c.files || 0), 0);
    status.textContent = `${(data.collections || []).length} collections, ${docs} documents`;
  });
})();
