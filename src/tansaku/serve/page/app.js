// The tansaku search page: calls the server's JSON endpoints only (no search rule lives here).
// Every text from the index reaches the DOM as text (textContent, text nodes): never as HTML.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const box = $("q"), mode = $("mode"), level = $("level"), list = $("results"), status = $("status");
  const passage = $("passage"), home = passage.parentNode;
  const STEP = 20, TURNS_STEP = 3;
  // How long typing must pause before a search is sent, by what a search costs: a keyword search
  // takes milliseconds, a meaning search embeds the query, a best search may run three models.
  const PAUSE_MS = { search: 50, vsearch: 150, query: 300 };
  let composing = false, timer = 0, selected = -1, results = [], serial = 0, opened = null;
  let inflight = null; // the search being answered; a newer one aborts it, and the server stops it
  let lastSent = -Infinity, lastKey = ""; // when the last search was sent, and what it asked
  const kinds = {}; // collection name -> type (files, claude, codex), from /status
  const chosen = new Set(); // collection chips that are on; none on = the default collections
  // The footer's sources: /status and /models at load, and the index summary every answer carries.
  const index = { status: null, models: [], summary: null, summaryKey: "", reloading: false };
  const folded = {}; // which warning lists a person opened, kept open across searches

  function headers(json) {
    const h = json ? { "Content-Type": "application/json" } : {};
    const token = sessionStorage.getItem("tansaku-token");
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }
  async function call(method, path, body, signal) {
    const reply = await fetch(path, { method, headers: headers(!!body), body: body && JSON.stringify(body), signal });
    if (reply.status === 401) { $("token-box").hidden = false; }
    return { status: reply.status, data: await reply.json() };
  }
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function button(text, onClick) {
    const b = el("button", "", text);
    b.type = "button";
    b.addEventListener("click", (e) => { e.stopPropagation(); onClick(b); });
    return b;
  }
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  // A server sentence with its `commands` as code a person can select and copy.
  function sentence(tag, cls, text) {
    const node = el(tag, cls);
    String(text).split("`").forEach((part, k) => node.append(k % 2 ? el("code", "", part) : part));
    return node;
  }
  // Warnings as one line ("2 warnings") that opens to the list: each its code and its message.
  function foldedList(name, items) {
    const d = el("details", "warnings");
    d.dataset.name = name;
    d.open = !!folded[name];
    d.addEventListener("toggle", () => { folded[name] = d.open; });
    const ul = el("ul");
    ul.append(...items);
    d.append(el("summary", "", plural(items.length, "warning")), ul);
    return d;
  }
  function warningItem(w) {
    const li = sentence("li", "warning", w.message);
    li.prepend(el("code", "code", w.code), " ");
    return li;
  }
  // A snippet line with the server's marks: [start, end) in code points, whole words of the
  // query's own terms (the ones the CLI chose the snippet by), so the page marks what matched.
  function highlighted(line, spans) {
    const frag = document.createDocumentFragment();
    if (!spans || !spans.length) { frag.append(line); return frag; }
    const chars = /[\uD800-\uDFFF]/.test(line) ? Array.from(line) : line;
    const cut = (a, b) => (typeof chars === "string" ? chars.slice(a, b) : chars.slice(a, b).join(""));
    let last = 0;
    for (const [start, end] of spans) {
      frag.append(cut(last, start), el("mark", "", cut(start, end)));
      last = end;
    }
    frag.append(cut(last, chars.length));
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
  async function run(again) {
    const query = box.value.trim();
    const body = { query, n: 20, ...filters() };
    if (mode.value === "query") body.explain = true;
    const key = mode.value + JSON.stringify(body);
    if (key === lastKey && again !== true) return; // asked already (a key that changed nothing)
    lastKey = query ? key : "";
    const mine = ++serial;
    if (inflight) inflight.abort();
    inflight = null;
    if (!query) { show([]); status.replaceChildren(); return; }
    lastSent = performance.now();
    const controller = (inflight = new AbortController());
    // Beside the results: the words to mark, and the index's counts for the status line.
    Object.assign(body, { marks: true, index_summary: true });
    let reply;
    try {
      reply = await call("POST", "/" + mode.value, body, controller.signal);
    } catch (err) {
      if (err.name === "AbortError") return;
      lastKey = ""; // asked again on the next key or Enter
      showError({ message: "the tansaku server did not answer: is it running?" });
      return;
    }
    if (mine !== serial) return;
    inflight = null;
    const { status: code, data } = reply;
    if (code !== 200) { lastKey = ""; show([]); showError(data.error || {}); return; }
    const count = data.total ?? data.results.length;
    const took = data.took_ms == null ? "?" : Math.round(data.took_ms);
    status.replaceChildren(el("div", "count", `${plural(count, "result")} in ${took} ms (${data.mode})`));
    if ((data.warnings || []).length) status.append(foldedList("answer", data.warnings.map(warningItem)));
    render(data.results);
    if (data.index_summary) followIndex(data.index_summary);
    requestAnimationFrame(() => window.dispatchEvent(new CustomEvent("tansaku:painted")));
  }
  function transcriptLine(t) {
    const bits = [t.level, t.role, t.timestamp && t.timestamp.slice(0, 16).replace("T", " ")];
    if (t.matches > 1) bits.push(`${t.matches} matching turns`);
    if (t.session_title) bits.push(t.session_title);
    return bits.filter(Boolean).join(" · ");
  }
  // The list's new items; an opened passage leaves the list first, so that it is never dropped.
  function show(nodes) {
    closePassage();
    selected = -1;
    box.removeAttribute("aria-activedescendant");
    list.replaceChildren(...nodes);
  }
  // A word of a shell command as a shell reads it: quoted unless it is plain.
  const shellWord = (s) => (/^[\p{L}\p{N}_@%+=:,./-]+$/u.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);
  // Where a result's match is: the first marked line of its snippet, else the transcript turn.
  function hitLine(r) {
    if (r.transcript && r.transcript.line) return r.transcript.line;
    const snip = r.snippet;
    if (!snip || !snip.lines) return 1;
    const k = (snip.marks || []).findIndex((m) => m.length);
    return snip.start_line + Math.max(0, k);
  }
  async function copy(text, b) {
    const was = b.dataset.label || (b.dataset.label = b.textContent);
    try { await navigator.clipboard.writeText(text); b.textContent = "copied"; }
    catch { b.textContent = "select it"; } // no clipboard (a page not served from this machine)
    setTimeout(() => { b.textContent = was; }, 1200);
  }
  // The command that prints the file from the matching line, and the file's own path:line for
  // an editor (`code -g PATH:LINE`, `vim +LINE PATH`): a web page may not open local files itself.
  function whereLine(r) {
    const line = hitLine(r);
    const get = `tansaku get ${shellWord(`${r.collection}/${r.path}`)}:${line}`;
    const row = el("div", "where");
    row.append(el("code", "cmd", get), button("copy command", (b) => copy(get, b)));
    if (r.disk_path) {
      const at = `${r.disk_path}:${line}`;
      const b = button("copy path:line", (btn) => copy(at, btn));
      b.title = at;
      row.append(b);
    }
    return row;
  }
  function render(items) {
    results = items;
    const nodes = items.map((r, i) => {
      const li = el("li");
      li.id = "result-" + i;
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
          pre.append(`${snip.start_line + k}: `, highlighted(line, snip.marks && snip.marks[k]), "\n");
        });
        li.append(pre);
      }
      li.append(whereLine(r));
      if (r.explain) {
        const d = el("details"); d.append(el("summary", "", "why this result"), el("pre", "", JSON.stringify(r.explain, null, 1)));
        li.append(d);
      }
      li.addEventListener("click", (e) => {
        if (passage.contains(e.target) || e.target.closest("details, .where")) return;
        select(i); open(i);
      });
      return li;
    });
    show(nodes);
  }

  // --- Markdown: blocks and inline spans built as elements, every text as text ---------------
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}> ?(.*)$/;
  const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
  const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
  const INDENTED = /^(?: {4}|\t)/;
  const INLINE = new RegExp([
    /\\([!-/:-@[-`{-~])/.source, // a backslash escape: the character itself
    /(`+)([^`]|[^`][\s\S]*?[^`])\2(?!`)/.source, // code
    // Strong and emphasis; underscores only at the edges of words (snake_case stays as it is).
    /\*\*(?=\S)([\s\S]*?\S)\*\*|(?<![\p{L}\p{N}_])__(?=[^\s_])([\s\S]*?[^\s_])__(?![\p{L}\p{N}_])/.source,
    /\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<![\p{L}\p{N}_])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\p{L}\p{N}_])/.source,
    /!\[([^\]]*)\]\([^)]*\)/.source, // an image: its text only, nothing is loaded
    /\[([^\]]+)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/.source, // a link
    /<([a-z][a-z0-9+.-]*:[^\s<>]+)>/.source, // an autolink
    /\bhttps?:\/\/[^\s<>()]*[^\s<>().,;:!?'"]/.source, // a bare web address
  ].join("|"), "giu");
  const WEB = /^https?:\/\//i;
  // A link only to a web address (http or https); any other (javascript:, data:, a file) is text.
  function link(label, url) {
    if (!WEB.test(url)) {
      const span = el("span", "link-text");
      span.append(label);
      if (url) span.title = url;
      return span;
    }
    const a = el("a");
    a.href = url;
    a.rel = "noopener noreferrer nofollow";
    a.target = "_blank";
    a.append(label);
    return a;
  }
  function inline(text) {
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of text.matchAll(INLINE)) {
      frag.append(text.slice(last, m.index));
      last = m.index + m[0].length;
      if (m[1] !== undefined) frag.append(m[1]);
      else if (m[3] !== undefined) frag.append(el("code", "", m[3].replace(/^ (.*) $/s, "$1")));
      else if (m[4] !== undefined || m[5] !== undefined) {
        const s = el("strong"); s.append(inline(m[4] ?? m[5])); frag.append(s);
      } else if (m[6] !== undefined || m[7] !== undefined) {
        const s = el("em"); s.append(inline(m[6] ?? m[7])); frag.append(s);
      } else if (m[8] !== undefined) frag.append(el("span", "image", m[8] ? `[image: ${m[8]}]` : "[image]"));
      else if (m[9] !== undefined) frag.append(link(inline(m[9]), m[10]));
      else if (m[11] !== undefined) frag.append(link(m[11], m[11]));
      else frag.append(link(m[0], m[0]));
    }
    frag.append(text.slice(last));
    return frag;
  }
  const startsBlock = (line) =>
    FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
  // Block elements for ``lines``; each carries the source line it starts on (``first`` is the
  // number of lines[0]; null for text that has no lines of its own, such as a transcript turn).
  function markdown(lines, first) {
    const out = [];
    const block = (tag, at, cls) => {
      const node = el(tag, cls);
      if (first != null) node.dataset.line = first + at;
      out.push(node);
      return node;
    };
    let i = 0, m;
    if (first === 1 && /^(---|\+\+\+)\s*$/.test(lines[0] || "")) { // front matter, as written
      const close = lines.findIndex((l, k) => k > 0 && /^(---|\+\+\+|\.\.\.)\s*$/.test(l));
      if (close > 0) { block("pre", 0, "front-matter").textContent = lines.slice(0, close + 1).join("\n"); i = close + 1; }
    }
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) { i++; continue; }
      const start = i;
      if ((m = FENCE.exec(line))) {
        const fence = m[1], body = [];
        const closing = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
        for (i++; i < lines.length && !closing.test(lines[i]); i++) body.push(lines[i]);
        i++;
        const code = el("code", "", body.join("\n"));
        if (m[2]) code.dataset.lang = m[2];
        block("pre", start, "code").append(code);
      } else if ((m = HEADING.exec(line))) {
        block("h" + m[1].length, start).append(inline(m[2] || ""));
        i++;
      } else if (RULE.test(line)) {
        block("hr", start);
        i++;
      } else if (QUOTE.test(line)) {
        const body = [];
        for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) body.push(m[1]);
        block("blockquote", start).append(...markdown(body, first == null ? null : first + start));
      } else if ((m = ITEM.exec(line))) {
        i = mdList(lines, i, m, block, first);
      } else if (INDENTED.test(line)) {
        const body = [];
        for (; i < lines.length && (INDENTED.test(lines[i]) || !lines[i].trim()); i++) body.push(lines[i].replace(INDENTED, ""));
        while (body.length && !body[body.length - 1].trim()) body.pop();
        block("pre", start, "code").append(el("code", "", body.join("\n")));
      } else if (line.includes("|") && TABLE_RULE.test(lines[i + 1] || "") && lines[i + 1].includes("-")) {
        const table = block("table", start);
        const cells = (l) => l.trim().replace(/^\||\|$/g, "").split(/(?<!\\)\|/).map((c) => c.trim());
        const row = (l, tag) => { const tr = el("tr"); for (const c of cells(l)) { const td = el(tag); td.append(inline(c)); tr.append(td); } return tr; };
        table.append(row(line, "th"));
        for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) table.append(row(lines[i], "td"));
      } else {
        const body = [line];
        let tag = "p";
        for (i++; i < lines.length && lines[i].trim(); i++) {
          if ((m = SETEXT.exec(lines[i]))) { tag = m[1][0] === "=" ? "h1" : "h2"; i++; break; }
          if (startsBlock(lines[i])) break;
          body.push(lines[i]);
        }
        block(tag, start).append(inline(body.map((l) => l.trim()).join("\n")));
      }
    }
    return out;
  }
  // A list from ``lines[i]`` (the item ``m``): each item's own lines (its first, the indented
  // lines and lazy continuations after it) are Markdown themselves, so lists nest.
  function mdList(lines, i, m, block, first) {
    const indent = m[1].length, ordered = /\d/.test(m[2]);
    const node = block(ordered ? "ol" : "ul", i);
    if (ordered && parseInt(m[2], 10) !== 1) node.start = parseInt(m[2], 10);
    let item;
    while (i < lines.length && (item = ITEM.exec(lines[i])) && item[1].length <= indent + 1 && /\d/.test(item[2]) === ordered) {
      const at = i, width = item[1].length + item[2].length + 1, body = [item[3] || ""];
      for (i++; i < lines.length; i++) {
        const l = lines[i], spaces = l.length - l.trimStart().length;
        if (!l.trim()) {
          const next = lines.slice(i + 1).find((x) => x.trim());
          if (next === undefined || next.length - next.trimStart().length < width) break;
          body.push("");
        } else if (spaces >= width || (spaces > indent && ITEM.test(l))) body.push(l.slice(Math.min(spaces, width)));
        else if (!startsBlock(l) && body[body.length - 1].trim()) body.push(l.trim()); // a lazy line
        else break;
      }
      const li = el("li");
      if (first != null) li.dataset.line = first + at;
      if (body.length === 1) li.append(inline(body[0]));
      else li.append(...markdown(body, first == null ? null : first + at));
      node.append(li);
      while (i < lines.length && !lines[i].trim()) {
        const next = lines.slice(i).find((x) => x.trim());
        if (next === undefined || !ITEM.test(next)) break;
        i++;
      }
    }
    return i;
  }
  const isMarkdown = (path) => /\.(md|markdown|mdx|mkd|mdown|qmd|rmd)$/i.test(path || "");

  // --- An opened result: the passage in place under it ----------------------------------------
  async function open(i) {
    const r = results[i];
    if (!r) return;
    const turn = r.transcript && r.transcript.line;
    const from = Math.max(1, turn || (r.snippet && r.snippet.start_line) || 1);
    // A transcript hit opens as its turns (get on SESSION.jsonl:LINE); a file as its lines.
    opened = { ref: r.virtual_path, from, count: STEP, session: !!turn, context: TURNS_STEP, reading: false,
      line: hitLine(r), index: i, markdown: isMarkdown(r.path), source: false };
    $("passage-path").textContent = r.virtual_path;
    list.children[i].append(passage); // opened in place, under its result
    passage.hidden = false;
    await loadPassage();
  }
  function closePassage() {
    passage.hidden = true;
    home.append(passage);
    opened = null;
  }
  async function loadPassage() {
    const fields = { ref: opened.ref, from_line: opened.from };
    if (opened.session) fields.context = opened.context; else fields.max_lines = opened.count;
    const asked = opened;
    const { status: code, data } = await call("GET", "/get?" + new URLSearchParams(fields));
    if (opened !== asked) return; // closed, or another opened, while it loaded
    if (code !== 200) { showError(data.error || {}); return; }
    if (data.messages) { showTurns(data); return; }
    opened.lines = data.lines;
    $("turns").hidden = true;
    showLines();
    $("more").textContent = "more lines";
    $("more").hidden = !data.truncated;
    $("whole").hidden = true;
  }
  // A Markdown file reads as Markdown (the matching line's block marked), any file as its
  // numbered lines: "source" switches between the two.
  function showLines() {
    const rendered = opened.markdown && !opened.source, md = $("passage-md");
    $("view-source").hidden = !opened.markdown;
    $("view-source").setAttribute("aria-pressed", String(opened.source));
    md.hidden = !rendered;
    $("passage-lines").hidden = rendered;
    if (!rendered) {
      $("passage-lines").textContent = opened.lines.map((l, k) => `${opened.from + k}: ${l}`).join("\n");
      return;
    }
    md.replaceChildren(...markdown(opened.lines, opened.from));
    const blocks = [...md.children].filter((b) => +b.dataset.line <= opened.line);
    if (blocks.length) blocks[blocks.length - 1].classList.add("focus");
  }
  function turnNode(m, focus) {
    const li = el("li", m.line === focus ? "turn focus" : "turn");
    const when = m.timestamp ? m.timestamp.slice(0, 19).replace("T", " ") : "";
    li.append(el("div", "meta", [`${m.line}:`, m.role, m.tool_name, when].filter(Boolean).join(" ")));
    // What a person or the assistant wrote is Markdown; a tool's call or output is text as it is.
    if (m.role === "tool" || m.tool_name) li.append(el("pre", "", m.text));
    else { const body = el("div", "md"); body.append(...markdown(String(m.text).split("\n"), null)); li.append(body); }
    return li;
  }
  function showTurns(data) {
    opened.sessionId = data.session_id;
    $("passage-lines").hidden = true;
    $("passage-md").hidden = true;
    $("view-source").hidden = true;
    const turns = $("turns");
    turns.replaceChildren(...data.messages.map((m) => turnNode(m, data.focus_line)));
    turns.hidden = false;
    if ((data.warnings || []).length) {
      const li = el("li");
      li.append(foldedList("turns", data.warnings.map(warningItem)));
      turns.append(li);
    }
    $("more").textContent = "more turns";
    $("more").hidden = data.messages.length >= data.total_turns;
    $("whole").hidden = false;
  }
  // The command that prints what the panel shows.
  function command() {
    if (opened.reading) return `tansaku session read ${opened.sessionId} --from-line ${opened.from}`;
    if (opened.session) return `tansaku get ${shellWord(opened.ref)} -C ${opened.context}`;
    return `tansaku get ${shellWord(opened.ref)}:${opened.from}`;
  }
  // The whole session from its first line, a page at a time (session read).
  async function readSession(fromLine) {
    const fields = { session: opened.sessionId, from_line: fromLine, limit: STEP };
    const asked = opened;
    const { status: code, data } = await call("GET", "/session?" + new URLSearchParams(fields));
    if (opened !== asked) return;
    if (code !== 200) { showError(data.error || {}); return; }
    if (!opened.reading) { opened.reading = true; opened.from = fromLine; $("turns").replaceChildren(); }
    $("turns").append(...data.messages.map((m) => turnNode(m, null)));
    opened.next = data.next_line;
    $("more").textContent = "next turns";
    $("more").hidden = !data.truncated;
  }

  // --- Keys: the box keeps the caret; arrows move a visible focus over the results ------------
  function select(k) {
    const items = list.children;
    if (!items.length) return;
    selected = Math.max(0, Math.min(items.length - 1, k));
    [...items].forEach((li, j) => {
      li.classList.toggle("selected", j === selected);
      if (j === selected) li.setAttribute("aria-current", "true"); else li.removeAttribute("aria-current");
    });
    box.setAttribute("aria-activedescendant", items[selected].id);
    items[selected].scrollIntoView({ block: "nearest" });
  }
  function unselect() {
    selected = -1;
    box.removeAttribute("aria-activedescendant");
    for (const li of list.children) { li.classList.remove("selected"); li.removeAttribute("aria-current"); }
  }
  function move(step) {
    if (opened) closePassage(); // back to the list, then along it
    select(selected < 0 ? (step > 0 ? 0 : list.children.length - 1) : selected + step);
  }
  // Esc: an opened document goes back to the list (the result keeps the focus); else the focus
  // on a result goes back to the box; else the box lets go of the keyboard (/ brings it back).
  function escape() {
    if (opened) {
      const at = opened.index;
      closePassage();
      if (at >= 0) select(at);
      return true;
    }
    if (selected >= 0) { unselect(); return true; }
    if (document.activeElement === box) { box.blur(); return true; }
    return false;
  }
  // A key that belongs to an input method's composition (Enter that confirms a candidate, arrows
  // that choose one) is the input method's: keyCode 229 is how some browsers say so.
  const composingKey = (e) => e.isComposing || composing || e.keyCode === 229;
  function onKey(e) {
    if (composingKey(e) || e.altKey || e.ctrlKey || e.metaKey) return;
    const target = e.target, inBox = target === box;
    // Keys go to the box, or to the page when nothing that takes keys has the focus.
    const free = inBox || target === document.body || (list.contains(target) && !target.closest("button, a, summary, input, select"));
    if (e.key === "/" && !inBox && !/^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName)) { e.preventDefault(); box.focus(); return; }
    if (e.key === "Escape") { if ((free || passage.contains(target)) && escape()) e.preventDefault(); return; }
    if (!free) return;
    if (e.key === "ArrowDown") { e.preventDefault(); move(1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); move(-1); }
    else if (e.key === "Enter") {
      e.preventDefault();
      if (selected >= 0) open(selected); else if (inBox) run(true);
    }
  }

  function schedule() {
    clearTimeout(timer);
    if (composing) return;
    const pause = PAUSE_MS[mode.value] || 150;
    // A keyword search is cheap: a key pressed after a pause searches at once, and keys that follow
    // within the pause wait for it to end. The model modes always wait for the pause.
    if (mode.value === "search" && performance.now() - lastSent >= pause) run();
    else timer = setTimeout(run, pause);
  }
  function toggle(button) {
    const on = button.getAttribute("aria-pressed") !== "true";
    button.setAttribute("aria-pressed", String(on));
    return on;
  }

  // --- The index: collection chips and the status line, following every answer ---------------
  function showCollections(collections) {
    const chips = collections.map((c) => {
      const name = c.collection.name;
      kinds[name] = c.collection.type || "files";
      const chip = el("button", "", `${name} ${c.documents}`);
      chip.type = "button";
      chip.setAttribute("aria-pressed", String(chosen.has(name)));
      chip.dataset.collection = name;
      if (!c.collection.include) chip.title = "excluded from searches unless chosen";
      chip.addEventListener("click", () => { toggle(chip) ? chosen.add(name) : chosen.delete(name); run(); });
      return chip;
    });
    $("chips").replaceChildren(...chips);
    $("transcript-filters").hidden = !hasTranscripts();
  }
  // /status's collections as the summary an answer carries (inspect/summary.py).
  function summaryOf(collections) {
    const sum = (k) => collections.reduce((n, c) => n + (c[k] || 0), 0);
    const chunks = sum("chunks"), vectors = sum("vectors"), quick = sum("quick_vectors");
    const state = !chunks || (!vectors && !quick) ? "none" : vectors >= chunks ? "full" : !vectors && quick >= chunks ? "quick" : "partial";
    return { documents: sum("documents"), chunks, vectors, quick_vectors: quick, vector_state: state,
      collections: collections.map((c) => ({ name: c.collection.name, documents: c.documents, chunks: c.chunks,
        vectors: c.vectors, quick_vectors: c.quick_vectors, vector_state: c.vector_state })) };
  }
  function countsLine(s) {
    const n = s.collections.length;
    let vectors = `vectors: ${s.vector_state}`;
    if (s.chunks) {
      const quick = s.quick_vectors ? `, ${s.quick_vectors} quick` : "";
      vectors += ` (${s.vectors}${quick} of ${plural(s.chunks, "chunk")})`;
    }
    const line = el("span", "counts", `${plural(s.documents, "document")} in ${plural(n, "collection")} · ${vectors}`);
    line.id = "index-counts";
    line.dataset.vectorState = s.vector_state;
    line.dataset.vectors = String(s.vectors + s.quick_vectors);
    return line;
  }
  // The status bar: what the index holds, and what is missing folded into one line, each gap
  // with the command that fills it. The page only shows them: the server is read-only.
  function showStatus() {
    const bar = $("statusbar"), data = index.status || {}, s = index.summary;
    if (!s) return;
    const items = [];
    const present = [];
    for (const w of data.warnings || []) { const li = warningItem(w); li.classList.add("gap"); items.push(li); }
    for (const line of data.pending || []) items.push(sentence("li", "gap", line));
    const embed = index.models.find((m) => m.role === "embed");
    if (!s.vectors && !s.quick_vectors && s.collections.length && embed && embed.present) {
      items.push(sentence("li", "gap", "no vectors yet: meaning and best search need `tansaku embed`"));
    }
    for (const m of index.models) {
      const item = m.present
        ? el("span", "model", `${m.role} model ✓`)
        : sentence("li", "gap model", `${m.role} model missing (${m.needed_by}): \`${m.fix}\``);
      item.dataset.role = m.role;
      (m.present ? present : items).push(item);
    }
    bar.replaceChildren(countsLine(s), ...present);
    if (items.length) bar.append(foldedList("index", items));
  }
  // An answer's summary: the status line takes it at once; when the index changed since the
  // page last asked (an update, an embed), /status and /models are asked again for the rest.
  function followIndex(summary) {
    const key = JSON.stringify(summary);
    if (key === index.summaryKey) return;
    const before = index.summaryKey;
    index.summary = summary;
    index.summaryKey = key;
    for (const c of summary.collections) {
      const chip = document.querySelector(`#chips button[data-collection="${CSS.escape(c.name)}"]`);
      if (chip) chip.textContent = `${c.name} ${c.documents}`;
    }
    showStatus();
    if (before) loadStatus();
  }
  async function loadStatus() {
    if (index.reloading) { index.again = true; return; } // once more when this one is done
    index.reloading = true;
    try {
      const [s, m] = await Promise.all([call("GET", "/status"), call("GET", "/models")]);
      if (s.status !== 200) { if (s.data.error) showError(s.data.error); return; }
      showCollections(s.data.collections || []);
      index.status = s.data;
      index.models = m.status === 200 ? m.data.models : [];
      if (!index.summaryKey) { // an answer's summary, once there is one, is what later ones compare with
        index.summary = summaryOf(s.data.collections || []);
        index.summaryKey = JSON.stringify(index.summary);
      }
      showStatus();
    } finally {
      index.reloading = false;
      if (index.again) { index.again = false; loadStatus(); }
    }
  }

  box.addEventListener("compositionstart", () => { composing = true; clearTimeout(timer); });
  box.addEventListener("compositionend", () => { composing = false; schedule(); });
  box.addEventListener("input", (e) => { if (!e.isComposing) schedule(); });
  document.addEventListener("keydown", onKey);
  for (const control of [mode, level, $("since"), $("until")]) control.addEventListener("change", run);
  for (const b of document.querySelectorAll("#roles button")) b.addEventListener("click", () => { toggle(b); run(); });
  $("more").addEventListener("click", () => {
    if (opened.reading) { readSession(opened.next); return; }
    if (opened.session) opened.context += TURNS_STEP; else opened.count += STEP;
    loadPassage();
  });
  $("whole").addEventListener("click", () => { opened.reading = false; readSession(1); });
  $("close").addEventListener("click", () => escape());
  $("view-source").addEventListener("click", () => { opened.source = !opened.source; showLines(); });
  $("copy-path").addEventListener("click", (e) => copy(opened.ref, e.currentTarget));
  $("copy-get").addEventListener("click", (e) => copy(command(), e.currentTarget));
  $("token-box").addEventListener("submit", (e) => e.preventDefault()); // Enter sets it (change), sends nothing
  $("token").addEventListener("change", (e) => { sessionStorage.setItem("tansaku-token", e.target.value); loadStatus(); run(true); });
  loadStatus();
})();
