// ql3 panel: the scripts folder page (ql3-edge, ADR 0044; ql3-control,
// per project, ADR 0052: the same routes under /api/v1/projects/{p}). Served after
// app.js in the same response and plugged in through window.ql3Panel.
// A folder tree on the left, an editor with line numbers and syntax
// colouring (our own small highlighter: no CDN, no library) on the right,
// save with conflict detection (If-Match: a stale editor gets 412 and is
// told, never overwrites), new/rename/delete/upload, and "Run now" with
// the run's live log beside the editor.
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const { h, api, render } = P;
  const t = P.t || ((key, english) => english);
  if (P.addMessages) P.addMessages({
    en: {
      "scripts.title": "Scripts", "scripts.top": "scripts", "scripts.empty": "This folder is empty.",
      "scripts.newFile": "New file", "scripts.newFolder": "New folder", "scripts.upload": "Upload",
      "scripts.save": "Save", "scripts.saved": "Saved.", "scripts.rename": "Rename", "scripts.delete": "Delete",
      "scripts.run": "Run now", "scripts.reload": "Reload from server", "scripts.pick": "Pick a script on the left, or create one.",
      "scripts.conflict": "This file changed on the server since you opened it. Your text is kept here; reload to see the server's version (copy your changes first).",
      "scripts.exists": "A file with this name exists already.", "scripts.unsaved": "unsaved changes",
      "scripts.askNewFile": "New file (path relative to this folder):", "scripts.askNewFolder": "New folder name:",
      "scripts.askRename": "New path (relative to the scripts folder):", "scripts.askDelete": "Delete {name}?",
      "scripts.log": "Run log", "scripts.waiting": "Run {id}: waiting to start…", "scripts.following": "Run {id}: following live output…",
      "scripts.finished": "Run {id}: {status}", "scripts.uploaded": "Uploaded {files} file(s).",
      "scripts.help": "Script tasks run a file with the interpreter its extension names (.js node, .py python3, .sh bash, .ts tsx) from its folder; in a shell task, task FILE ARGS does the same.",
      "scripts.size": "{size} bytes", "scripts.binary": "This file is not text; it cannot be edited here.",
      "scripts.project": "Project", "scripts.noProject": "Create a project first: each project has its own scripts folder.",
    },
    "zh-CN": {
      "scripts.title": "脚本", "scripts.top": "脚本目录", "scripts.empty": "此文件夹为空。",
      "scripts.newFile": "新建文件", "scripts.newFolder": "新建文件夹", "scripts.upload": "上传",
      "scripts.save": "保存", "scripts.saved": "已保存。", "scripts.rename": "重命名", "scripts.delete": "删除",
      "scripts.run": "立即运行", "scripts.reload": "从服务器重新加载", "scripts.pick": "请在左侧选择一个脚本，或新建一个。",
      "scripts.conflict": "自你打开以来，此文件已在服务器上被修改。你的内容仍保留在这里；重新加载可查看服务器上的版本（请先复制你的修改）。",
      "scripts.exists": "同名文件已存在。", "scripts.unsaved": "有未保存的修改",
      "scripts.askNewFile": "新文件（相对于当前文件夹的路径）：", "scripts.askNewFolder": "新文件夹名称：",
      "scripts.askRename": "新路径（相对于脚本目录）：", "scripts.askDelete": "删除 {name}？",
      "scripts.log": "运行日志", "scripts.waiting": "运行 {id}：等待启动…", "scripts.following": "运行 {id}：正在实时输出…",
      "scripts.finished": "运行 {id}：{status}", "scripts.uploaded": "已上传 {files} 个文件。",
      "scripts.help": "脚本任务按扩展名选择解释器（.js 用 node，.py 用 python3，.sh 用 bash，.ts 用 tsx），在脚本所在目录运行；在 shell 任务中，task 文件 参数 效果相同。",
      "scripts.size": "{size} 字节", "scripts.binary": "此文件不是文本，无法在此编辑。",
      "scripts.project": "项目", "scripts.noProject": "请先创建一个项目：每个项目有自己的脚本目录。",
    },
  });
  const fmt = (s, vars) => s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  const enc = encodeURIComponent;
  const join = (dir, name) => (dir ? dir + "/" + name : name);
  const parent = (p) => (p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "");

  // ---- raw requests (content is bytes, not JSON) ---------------------------
  async function failure(r) {
    let b = {};
    try { b = await r.json(); } catch (e) { b = { message: "HTTP " + r.status }; }
    const err = new Error(b.message || "HTTP " + r.status);
    err.status = r.status; err.field = b.field || "";
    if (r.status === 401) P.route();
    return err;
  }
  async function raw(method, path, body, headers) {
    const opt = { method, credentials: "same-origin", cache: "no-store", headers: Object.assign({ Accept: "application/json" }, headers || {}) };
    if (body !== undefined) { opt.headers["Content-Type"] = "application/octet-stream"; opt.body = body; }
    const r = await fetch(path, opt);
    if (!r.ok) throw await failure(r);
    return r;
  }

  // ---- the highlighter -----------------------------------------------------
  // One regular expression per language; each match is a token whose kind
  // is the first group that matched. Text between matches stays plain.
  const KEYWORDS = {
    js: "break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return super switch this throw try typeof var void while with yield async await null undefined true false require module exports",
    py: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield print self",
    sh: "if then else elif fi for while until do done case esac function in return exit export local readonly set unset echo source shift",
  };
  KEYWORDS.ts = KEYWORDS.js + " interface type enum implements private public protected readonly declare namespace abstract as keyof";
  const LANG = { js: "js", mjs: "js", cjs: "js", ts: "ts", py: "py", sh: "sh", bash: "sh" };
  const RULES = {};
  function rules(lang) {
    if (RULES[lang]) return RULES[lang];
    const kw = "\\b(?:" + KEYWORDS[lang].split(" ").join("|") + ")\\b";
    const num = "\\b(?:0x[0-9a-fA-F]+|\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)\\b";
    let src;
    if (lang === "py") src = "(#[^\\n]*)|(\"\"\"[\\s\\S]*?(?:\"\"\"|$)|'''[\\s\\S]*?(?:'''|$)|\"(?:\\\\.|[^\"\\\\\\n])*\"?|'(?:\\\\.|[^'\\\\\\n])*'?)|(" + num + ")|(" + kw + ")";
    else if (lang === "sh") src = "(#[^\\n]*)|(\"(?:\\\\.|[^\"\\\\])*\"?|'[^']*'?)|(" + num + ")|(" + kw + ")|(\\$\\{?[A-Za-z_][A-Za-z0-9_]*\\}?)";
    else src = "(\\/\\/[^\\n]*|\\/\\*[\\s\\S]*?(?:\\*\\/|$))|(\"(?:\\\\.|[^\"\\\\\\n])*\"?|'(?:\\\\.|[^'\\\\\\n])*'?|`(?:\\\\.|[^`\\\\])*`?)|(" + num + ")|(" + kw + ")";
    RULES[lang] = new RegExp(src, "g");
    return RULES[lang];
  }
  const KIND = ["tok-comment", "tok-string", "tok-number", "tok-keyword", "tok-var"];
  const MAX_HIGHLIGHT = 256 << 10; // larger files are shown plain
  // highlight fills el with text nodes and spans: never innerHTML, so a
  // script's content can never become markup.
  function highlight(el, text, lang) {
    const nodes = [];
    if (lang && text.length <= MAX_HIGHLIGHT) {
      const re = rules(lang);
      re.lastIndex = 0;
      let at = 0, m;
      while ((m = re.exec(text)) !== null) {
        if (m[0] === "") { re.lastIndex++; continue; }
        if (m.index > at) nodes.push(document.createTextNode(text.slice(at, m.index)));
        let k = 1;
        while (k < m.length && m[k] === undefined) k++;
        nodes.push(h("span", { class: KIND[k - 1] || "", text: m[0] }));
        at = m.index + m[0].length;
      }
      if (at < text.length) nodes.push(document.createTextNode(text.slice(at)));
    } else {
      nodes.push(document.createTextNode(text));
    }
    nodes.push(document.createTextNode("\n")); // keeps the last line's height when it is empty
    el.replaceChildren(...nodes);
  }

  // ---- the editor ------------------------------------------------------------
  // A transparent textarea over a highlighted <pre>, a line-number gutter
  // beside them; scrolling moves all three together.
  function editor(text, lang, onChange) {
    const gutter = h("pre", { class: "code-gutter", "aria-hidden": "true" });
    const layer = h("pre", { class: "code-layer", "aria-hidden": "true" });
    const ta = h("textarea", { class: "code-input", id: "script-editor", spellcheck: "false", autocomplete: "off", autocapitalize: "off", wrap: "off", "aria-label": "script" });
    ta.value = text;
    let lines = -1;
    const paint = () => {
      highlight(layer, ta.value, lang);
      const n = ta.value.split("\n").length;
      if (n !== lines) { lines = n; gutter.textContent = Array.from({ length: n }, (_, i) => i + 1).join("\n") + "\n"; }
    };
    const sync = () => { layer.scrollTop = ta.scrollTop; layer.scrollLeft = ta.scrollLeft; gutter.scrollTop = ta.scrollTop; };
    ta.addEventListener("input", () => { paint(); sync(); onChange(); });
    ta.addEventListener("scroll", sync);
    ta.addEventListener("keydown", (ev) => {
      if (ev.key === "Tab" && !ev.ctrlKey && !ev.metaKey && !ev.altKey) { // indent instead of leaving the editor
        ev.preventDefault();
        const s = ta.selectionStart;
        ta.setRangeText(lang === "py" ? "    " : "  ", s, ta.selectionEnd, "end");
        paint(); onChange();
      }
    });
    paint();
    return { el: h("div", { class: "code-editor" }, gutter, h("div", { class: "code-area" }, layer, ta)), ta };
  }

  // ---- the page ----------------------------------------------------------------
  // base is the folder's API: the edge's, or the chosen project's on
  // ql3-control (?project= in the page's address; the first project when
  // none is chosen).
  let base = "/api/v1/scripts";
  let project = "";
  let live = null; // the run log being followed (aborted when the page changes)
  function stopLive() { if (live) { live.abort(); live = null; } }

  async function show(p, params, g) {
    stopLive();
    const dir = params.get("dir") || "";
    const file = params.get("file") || "";
    let picker = null;
    if (P.S.control) {
      const projects = (await api("GET", "/api/v1/projects?limit=200")).items.filter((x) => x.status === "active");
      project = params.get("project") || (projects[0] ? projects[0].name : "");
      if (!project) { render(g, h("h1", { text: t("scripts.title", "Scripts") }), h("p", { class: "muted", id: "script-no-project", text: t("scripts.noProject", "Create a project first: each project has its own scripts folder.") })); return; }
      base = "/api/v1/projects/" + enc(project) + "/scripts";
      picker = h("select", { id: "script-project", "aria-label": t("scripts.project", "Project"), onchange: (ev) => { location.hash = "#/scripts?" + new URLSearchParams({ project: ev.target.value }).toString(); } },
        projects.map((x) => h("option", { value: x.name, text: x.name, selected: x.name === project })));
    }
    const list = await api("GET", base + "?path=" + enc(dir));
    const link = (d, f) => "#/scripts?" + new URLSearchParams(Object.assign(project ? { project } : {}, { dir: d }, f ? { file: f } : {})).toString();
    // breadcrumbs
    const crumbs = [h("a", { href: link(""), text: t("scripts.top", "scripts") })];
    let acc = "";
    for (const part of dir ? dir.split("/") : []) {
      acc = join(acc, part);
      crumbs.push(" / ", h("a", { href: link(acc), text: part }));
    }
    const items = list.entries.map((e) => {
      const path = join(dir, e.name);
      const a = e.kind === "dir"
        ? h("a", { href: link(path), class: "dir", text: e.name + "/" })
        : h("a", { href: link(dir, path), class: "file" + (path === file ? " current" : ""), text: e.name });
      return h("li", { "data-name": e.name, "data-kind": e.kind }, a);
    });
    if (dir) items.unshift(h("li", { "data-kind": "up" }, h("a", { href: link(parent(dir)), class: "dir", text: "../" })));
    const msg = h("p", { class: "notice", id: "script-msg", role: "status" });
    const say = (text, cls) => { msg.textContent = text; msg.className = cls || "notice"; };
    const act = (fn) => async () => {
      try { await fn(); } catch (e) { if (e.status !== 401) say(e.message, "formerr"); }
    };
    const upload = h("input", { type: "file", id: "script-upload", hidden: true });
    upload.addEventListener("change", act(async () => {
      const f = upload.files[0];
      if (!f) return;
      const n = f.name.toLowerCase();
      const format = n.endsWith(".zip") ? "zip" : n.endsWith(".tar") ? "tar" : (n.endsWith(".tar.gz") || n.endsWith(".tgz")) ? "tar.gz" : "";
      if (format) {
        const r = await raw("POST", base + "/upload?" + new URLSearchParams({ path: dir, format }).toString(), f);
        const res = await r.json();
        say(fmt(t("scripts.uploaded", "Uploaded {files} file(s)."), { files: res.files }));
        P.route();
        return;
      }
      await raw("PUT", base + "/content?path=" + enc(join(dir, f.name)), f, { "If-None-Match": "*" });
      location.hash = link(dir, join(dir, f.name));
    }));
    const tree = h("nav", { class: "script-tree", id: "script-tree", "aria-label": t("scripts.title", "Scripts") },
      h("div", { class: "crumbs", id: "script-crumbs" }, crumbs),
      items.length ? h("ul", { id: "script-list" }, items) : null,
      list.entries.length ? null : h("p", { class: "muted", id: "script-empty", text: t("scripts.empty", "This folder is empty.") }),
      h("div", { class: "bar" },
        h("button", { type: "button", id: "script-new-file", text: t("scripts.newFile", "New file"), onclick: act(async () => {
          const name = prompt(t("scripts.askNewFile", "New file (path relative to this folder):"));
          if (!name) return;
          const path = join(dir, name.replace(/^\/+/, ""));
          try {
            await raw("PUT", base + "/content?path=" + enc(path), "", { "If-None-Match": "*" });
          } catch (e) {
            if (e.status === 412) { say(t("scripts.exists", "A file with this name exists already."), "formerr"); return; }
            throw e;
          }
          location.hash = link(parent(path), path);
        }) }),
        h("button", { type: "button", id: "script-new-folder", text: t("scripts.newFolder", "New folder"), onclick: act(async () => {
          const name = prompt(t("scripts.askNewFolder", "New folder name:"));
          if (!name) return;
          await api("POST", base + "/folder", { path: join(dir, name) });
          location.hash = link(join(dir, name));
        }) }),
        h("button", { type: "button", id: "script-upload-button", text: t("scripts.upload", "Upload"), onclick: () => upload.click() }),
        upload));
    let pane;
    if (file) pane = await filePane(file, dir, say, act, link, g);
    else pane = h("section", { class: "script-pane" }, h("p", { class: "muted", id: "script-pick", text: t("scripts.pick", "Pick a script on the left, or create one.") }));
    render(g,
      h("h1", { text: t("scripts.title", "Scripts") }),
      picker ? h("p", { class: "bar" }, h("label", { for: "script-project", text: t("scripts.project", "Project") + " " }), picker) : null,
      h("p", { class: "muted", text: t("scripts.help", "") }),
      msg,
      h("div", { class: "scripts" }, tree, pane));
  }

  async function filePane(file, dir, say, act, link, g) {
    let r;
    try {
      r = await raw("GET", base + "/content?path=" + enc(file));
    } catch (e) {
      if (e.status === 404) { location.hash = link(dir); }
      throw e;
    }
    let etag = r.headers.get("ETag") || "";
    const bytes = new Uint8Array(await r.arrayBuffer());
    let text;
    try { text = new TextDecoder("utf-8", { fatal: true }).decode(bytes); }
    catch (e) { return h("section", { class: "script-pane" }, h("h2", { class: "mono", text: file }), h("p", { class: "formerr", text: t("scripts.binary", "This file is not text; it cannot be edited here.") })); }
    const ext = file.includes(".") ? file.slice(file.lastIndexOf(".") + 1).toLowerCase() : "";
    const state = h("span", { class: "muted", id: "script-state", text: fmt(t("scripts.size", "{size} bytes"), { size: bytes.length }) });
    let dirty = false;
    const ed = editor(text, LANG[ext], () => { if (!dirty) { dirty = true; state.textContent = t("scripts.unsaved", "unsaved changes"); state.setAttribute("data-dirty", "true"); } });
    const conflict = h("div", { class: "formerr", id: "script-conflict", hidden: true },
      h("span", { text: t("scripts.conflict", "") }), " ",
      h("button", { type: "button", id: "script-reload", text: t("scripts.reload", "Reload from server"), onclick: () => P.route() }));
    const save = act(async () => {
      try {
        const res = await raw("PUT", base + "/content?path=" + enc(file), ed.ta.value, { "If-Match": etag });
        etag = res.headers.get("ETag") || etag;
        const body = await res.json();
        dirty = false; conflict.hidden = true;
        state.textContent = fmt(t("scripts.size", "{size} bytes"), { size: body.size });
        state.removeAttribute("data-dirty");
        say(t("scripts.saved", "Saved."));
      } catch (e) {
        if (e.status === 412) { conflict.hidden = false; return; }
        throw e;
      }
    });
    ed.ta.addEventListener("keydown", (ev) => { if ((ev.ctrlKey || ev.metaKey) && ev.key === "s") { ev.preventDefault(); save(); } });
    const log = h("pre", { class: "log", id: "script-log", "aria-label": t("scripts.log", "Run log") });
    const logState = h("p", { class: "muted", id: "script-log-state" });
    const runNow = act(async () => {
      if (dirty) await save();
      if (dirty) return; // the save failed (a conflict): run nothing unsaved
      const run = await api("POST", base + "/run", { path: file, idempotencyKey: "panel-" + Date.now() + "-" + Math.random().toString(36).slice(2) });
      follow(run.id, log, logState);
    });
    return h("section", { class: "script-pane" },
      h("div", { class: "bar" }, h("h2", { class: "mono", id: "script-path", text: file }), state),
      conflict,
      ed.el,
      h("div", { class: "bar" },
        h("button", { type: "button", class: "primary", id: "script-save", text: t("scripts.save", "Save"), onclick: save }),
        h("button", { type: "button", id: "script-run", text: t("scripts.run", "Run now"), onclick: runNow }),
        h("button", { type: "button", id: "script-rename", text: t("scripts.rename", "Rename"), onclick: act(async () => {
          const to = prompt(t("scripts.askRename", "New path (relative to the scripts folder):"), file);
          if (!to || to === file) return;
          await api("POST", base + "/move", { from: file, to });
          location.hash = link(parent(to), to);
        }) }),
        h("button", { type: "button", class: "danger", id: "script-delete", text: t("scripts.delete", "Delete"), onclick: act(async () => {
          if (!confirm(fmt(t("scripts.askDelete", "Delete {name}?"), { name: file }))) return;
          await api("DELETE", base + "?path=" + enc(file));
          location.hash = link(dir);
        }) })),
      h("h2", { text: t("scripts.log", "Run log") }), logState, log);
  }

  // follow waits for the run's first attempt to start, then streams its
  // log into pre until the run ends (the page leaving aborts it).
  async function follow(runId, pre, state) {
    stopLive();
    const ctl = new AbortController();
    live = ctl;
    pre.textContent = "";
    state.removeAttribute("data-status");
    const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
    try {
      state.textContent = fmt(t("scripts.waiting", "Run {id}: waiting to start…"), { id: runId });
      let run;
      for (;;) {
        run = await api("GET", "/api/v1/runs/" + enc(runId));
        if (ctl.signal.aborted) return;
        const a = (run.attempts || [])[0];
        if ((a && a.startedAtMs) || ["succeeded", "failed", "timed_out", "cancelled", "lost"].includes(run.status)) break;
        await sleep(300);
      }
      state.textContent = fmt(t("scripts.following", "Run {id}: following live output…"), { id: runId });
      const r = await fetch("/api/v1/runs/" + enc(runId) + "/attempts/1/log?follow=1", { credentials: "same-origin", signal: ctl.signal, cache: "no-store" });
      if (r.ok) {
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          pre.append(dec.decode(value, { stream: true }));
          pre.scrollTop = pre.scrollHeight;
        }
        pre.append(dec.decode());
      }
      for (;;) {
        run = await api("GET", "/api/v1/runs/" + enc(runId));
        if (ctl.signal.aborted || ["succeeded", "failed", "timed_out", "cancelled", "lost"].includes(run.status)) break;
        await sleep(300);
      }
      state.textContent = fmt(t("scripts.finished", "Run {id}: {status}"), { id: runId, status: run.status });
      state.setAttribute("data-status", run.status);
      state.append(" ", h("a", { href: "#/runs/" + enc(runId), text: "→" }));
    } catch (e) {
      if (e.name !== "AbortError" && e.status !== 401) state.textContent = e.message;
    } finally {
      if (live === ctl) live = null;
    }
  }

  // Both servers: the edge's folder, or a project's on ql3-control.
  P.register("scripts", () => true, show);
})();
