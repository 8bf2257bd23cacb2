// ql3 panel: a small single-page client of the edge API and the admin API
// (same shapes). No dependencies, no inline code (the CSP forbids it), the
// admin token never touches page storage: sign-in turns it into an
// HttpOnly session cookie the page cannot read.
//
// Every user-visible string goes through t(key, english) and lives in the
// catalogs (messages.js for this file, each page file its own, ADR 0050):
// English and Chinese (zh-CN), chosen from the browser's languages unless
// the user picked one with the switch (kept in localStorage). Dates are
// shown in the browser's time zone.
"use strict";
(function () {
  const S = { server: "", control: false, authRequired: true, follow: null, timers: [], gen: 0 };
  const main = () => document.getElementById("main");
  const TERMINAL = ["succeeded", "failed", "timed_out", "cancelled", "skipped", "lost", "abandoned"];
  const STATUSES = ["created", "queued", "retry_wait", "dispatching", "running", "succeeded", "failed", "timed_out", "cancelled", "skipped", "lost", "abandoned"];

  // ---- languages -----------------------------------------------------------
  const LANGS = ["en", "zh-CN"];
  const LANG_KEY = "ql3.lang";
  const I18N = { lang: "en", messages: { en: {}, "zh-CN": {} }, missing: new Set() };
  // pickLang: the switch's choice if one was made, else the first of the
  // browser's languages we have (zh, zh-TW, zh-Hans… → zh-CN), else English.
  function pickLang() {
    let saved = null;
    try { saved = localStorage.getItem(LANG_KEY); } catch (e) { saved = null; }
    if (LANGS.includes(saved)) return saved;
    const prefs = (navigator.languages && navigator.languages.length) ? navigator.languages : [navigator.language || "en"];
    for (const l of prefs) {
      const low = String(l).toLowerCase();
      if (low === "zh" || low.startsWith("zh-")) return "zh-CN";
      if (low === "en" || low.startsWith("en-")) return "en";
    }
    return "en";
  }
  // t looks key up in the current language, then English, then uses the
  // caller's English text; {name} placeholders are filled from vars. A key
  // the current language lacks is remembered (missingKeys, for the tests).
  function t(key, english, vars) {
    const cur = I18N.messages[I18N.lang] || {};
    let s = cur[key];
    if (s === undefined) {
      I18N.missing.add(key);
      s = I18N.messages.en[key];
      if (s === undefined) s = english !== undefined ? english : key;
    }
    if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
    return s;
  }
  function addMessages(catalog) {
    for (const [lang, msgs] of Object.entries(catalog || {})) {
      if (!I18N.messages[lang]) I18N.messages[lang] = {};
      Object.assign(I18N.messages[lang], msgs);
    }
  }
  // translateStatic fills the page's fixed elements: [data-i18n] holds the
  // key, the English text is the element's own; nav links of page files use
  // the key nav.<name>.
  function translateStatic() {
    document.documentElement.lang = I18N.lang;
    document.querySelectorAll("[data-i18n]").forEach((e) => {
      if (!e.hasAttribute("data-en")) e.setAttribute("data-en", e.textContent);
      e.textContent = t(e.getAttribute("data-i18n"), e.getAttribute("data-en"));
    });
    for (const name of Object.keys(pages)) {
      const a = document.getElementById("nav-" + name);
      if (!a || a.hasAttribute("data-i18n")) continue;
      if (!a.hasAttribute("data-en")) a.setAttribute("data-en", a.textContent);
      a.textContent = t("nav." + name, a.getAttribute("data-en"));
    }
    const sw = document.getElementById("lang");
    if (sw) { sw.value = I18N.lang; sw.setAttribute("aria-label", t("lang.label", "Language")); }
  }
  function setLang(lang) {
    if (!LANGS.includes(lang)) return;
    I18N.lang = lang;
    try { localStorage.setItem(LANG_KEY, lang); } catch (e) { /* private mode: the choice lasts this page */ }
    translateStatic();
    if (document.getElementById("nav").hidden) { if (document.getElementById("signin")) showSignIn(""); } else route();
  }

  // ---- DOM helpers -------------------------------------------------------
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of kids.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  // when shows an instant in the browser's time zone, in the panel's
  // language; zone (optional) is named after it when it differs.
  function when(ms, zone) {
    if (!ms) return "—";
    const d = new Date(ms);
    let s;
    try { s = d.toLocaleString(I18N.lang, { timeZoneName: "short" }); } catch (e) { s = d.toLocaleString(); }
    const mine = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone && mine && zone !== mine) {
      try { s += " (" + d.toLocaleString(I18N.lang, { timeZone: zone, hour: "2-digit", minute: "2-digit", timeZoneName: "short" }) + ")"; } catch (e) { /* unknown zone: the local time alone */ }
    }
    return s;
  }
  function status(st) { return h("span", { class: "status st-" + st, "data-status": st, text: t("status." + st, st) }); }
  function td(label, ...kids) { return h("td", { "data-label": label }, ...kids); }
  // head is a table head of translated column names.
  function head(...cols) { return h("thead", {}, h("tr", {}, cols.map((x) => h("th", { text: x })))); }
  function clearTimers() {
    S.gen++;
    S.timers.forEach(clearInterval); S.timers = [];
    if (S.follow) { S.follow.abort(); S.follow = null; }
  }
  // put replaces el's children, leaving out absent (null) parts.
  function put(el, ...nodes) { el.replaceChildren(...nodes.flat().filter((x) => x !== null && x !== undefined)); }
  // render shows a view unless another one started since (g is the
  // generation the view was started in): a slow request of a page the
  // user left, or signed out of, must not paint over the current one.
  function render(g, ...nodes) { if (g === S.gen) put(main(), ...nodes); }
  const exitText = (c) => (c === undefined || c === null ? "—" : String(c));
  const yesNo = (b) => (b ? t("common.yes", "yes") : t("common.no", "no"));

  // ---- API ---------------------------------------------------------------
  class APIError extends Error {
    constructor(status, body) { super(body.message || ("HTTP " + status)); this.status = status; this.code = body.code; this.field = body.field || ""; }
  }
  async function api(method, path, body) {
    const opt = { method, headers: { "Accept": "application/json" }, credentials: "same-origin", cache: "no-store" };
    if (body !== undefined) { opt.headers["Content-Type"] = "application/json"; opt.body = JSON.stringify(body); }
    const r = await fetch(path, opt);
    if (r.status === 204) return null;
    let b = {};
    try { b = await r.json(); } catch (e) { b = { message: "HTTP " + r.status }; }
    if (r.status === 401 && !path.startsWith("/api/v1/session")) { showSignIn(t("signin.expired", "Your session ended; sign in again.")); throw new APIError(401, b); }
    if (!r.ok) throw new APIError(r.status, b);
    return b;
  }
  const q = (o) => { const p = new URLSearchParams(); for (const [k, v] of Object.entries(o)) if (v) p.set(k, v); const s = p.toString(); return s ? "?" + s : ""; };

  // ---- sign in / out ------------------------------------------------------
  function showSignIn(msg) {
    clearTimers();
    document.getElementById("nav").hidden = true;
    const err = h("div", { class: "ferr", "data-err": "token", id: "signin-err" });
    const tok = h("input", { type: "password", id: "token", name: "token", autocomplete: "off", required: true });
    const form = h("form", { id: "signin", onsubmit: async (ev) => {
      ev.preventDefault(); err.textContent = "";
      try { await api("POST", "/api/v1/session", { token: tok.value }); tok.value = ""; await boot(); }
      catch (e) { err.textContent = e.message; tok.setAttribute("aria-invalid", "true"); }
    } },
    h("h1", { text: t("signin.title", "Sign in") }),
    h("p", { class: "notice", text: msg || "" }),
    h("label", { for: "token", text: t("signin.token", "Admin token") }), tok, err,
    h("p", { class: "muted", text: t("signin.note", "The token is exchanged for a session cookie the page cannot read; it is not stored in the browser.") }),
    h("button", { class: "primary", type: "submit", id: "signin-submit", text: t("signin.submit", "Sign in") }));
    render(S.gen, form, passwordSignIn());
    tok.focus();
  }
  // passwordSignIn is the account form (ADR 0049, 0060): username and
  // password, then the one-time code when the server asks for it (401 on
  // field "code"). A lock's message says until when.
  function passwordSignIn() {
    const t = window.ql3Panel && window.ql3Panel.t || ((key, english) => english);
    const err = h("div", { class: "ferr", "data-err": "password", id: "pw-err", role: "alert" });
    const user = h("input", { type: "text", id: "pw-user", name: "username", autocomplete: "username", required: true });
    const pass = h("input", { type: "password", id: "pw-pass", name: "password", autocomplete: "current-password", required: true });
    const code = h("input", { type: "text", id: "pw-code", name: "code", inputmode: "numeric", autocomplete: "one-time-code", maxlength: "6" });
    const codeRow = h("div", { id: "pw-code-row", hidden: true }, h("label", { for: "pw-code", text: t("signin.code", "One-time code") }), code);
    return h("form", { id: "signin-password", onsubmit: async (ev) => {
      ev.preventDefault(); err.textContent = "";
      try {
        await api("POST", "/api/v1/session/password", { username: user.value, password: pass.value, code: code.value });
        pass.value = ""; code.value = ""; await boot();
      } catch (e) {
        if (e.field === "code" && codeRow.hidden) { codeRow.hidden = false; code.focus(); return; }
        err.textContent = e.message; code.value = "";
      }
    } },
    h("h2", { text: t("signin.account", "Or sign in with an account") }),
    h("label", { for: "pw-user", text: t("signin.username", "Username") }), user,
    h("label", { for: "pw-pass", text: t("signin.password", "Password") }), pass, codeRow, err,
    h("button", { class: "primary", type: "submit", id: "pw-submit", text: t("signin.submit", "Sign in") }));
  }
  async function signOut() {
    clearTimers();
    await api("DELETE", "/api/v1/session");
    showSignIn(t("signin.signedOut", "Signed out."));
  }

  // ---- router --------------------------------------------------------------
  async function route() {
    clearTimers();
    const g = S.gen;
    const [path, query] = (location.hash.slice(1) || "/tasks").split("?");
    const params = new URLSearchParams(query || "");
    const p = path.split("/").filter(Boolean);
    try {
      if (p[0] === "tasks" && p[1] === "new") return await taskForm(null, g);
      if (p[0] === "tasks" && p[1] && p[2] === "edit") return await taskForm(decodeURIComponent(p[1]), g);
      if (pages[p[0]] && pages[p[0]].on(S)) return await pages[p[0]].show(p.slice(1), params, g);
      return await taskList(params, g);
    } catch (e) {
      if (e.status !== 401) render(g, h("p", { class: "formerr", text: e.message }));
    }
  }

  // ---- tasks ----------------------------------------------------------------
  function command(spec) {
    if (!spec) return "";
    if (spec.shell) return spec.shell.command;
    if (spec.argv) return [spec.argv.file].concat(spec.argv.args || []).join(" ");
    if (spec.script) return ["task", spec.script.file].concat(spec.script.args || []).join(" ");
    return "";
  }
  // taskRows reads a page of tasks with what the list shows of each. The
  // edge answers it in one request (triggers and the last run ride along,
  // a query per page); the control plane's list has neither yet, so there
  // each task is read on its own and the last runs come from one page.
  // Both filter by search, label and enabled and answer the total; the
  // control plane also by project (?project=, which its views carry).
  async function taskRows(params) {
    const filter = { limit: "50", cursor: params.get("cursor"), q: params.get("q"), label: params.get("label"), enabled: params.get("enabled") };
    if (!S.control) {
      const list = await api("GET", "/api/v1/tasks" + q(filter));
      return { list, tasks: list.items, last: (t) => t.lastRun };
    }
    const list = await api("GET", "/api/v1/tasks" + q(Object.assign(filter, { project: params.get("project") })));
    const runs = await api("GET", "/api/v1/runs?limit=200");
    const last = {};
    for (const r of runs.items) if (!last[r.taskId]) last[r.taskId] = r;
    const tasks = await Promise.all(list.items.map((x) => api("GET", "/api/v1/tasks/" + encodeURIComponent(x.id))));
    return { list, tasks, last: (x) => last[x.id] };
  }
  function taskSearch(params) {
    const box = h("input", { type: "search", id: "task-search", name: "q", value: params.get("q") || "", placeholder: t("tasks.searchHint", "name, command or label"), "aria-label": t("common.search", "Search") });
    const label = h("input", { type: "text", id: "task-label", name: "label", value: params.get("label") || "", placeholder: t("tasks.label", "Label"), "aria-label": t("tasks.label", "Label"), class: "short" });
    const enabled = h("select", { id: "task-enabled", name: "enabled", "aria-label": t("tasks.enabled", "Enabled") },
      [["", t("common.any", "any")], ["true", t("tasks.onlyEnabled", "enabled")], ["false", t("tasks.onlyDisabled", "disabled")]].map(([v, l]) => h("option", { value: v, text: l, selected: (params.get("enabled") || "") === v })));
    // On the control plane the filter keeps the project a view chose.
    return h("form", { class: "bar", id: "task-filter", onsubmit: (ev) => {
      ev.preventDefault();
      location.hash = "#/tasks" + q({ q: box.value.trim(), label: label.value.trim(), enabled: enabled.value, project: S.control ? params.get("project") : "" });
    } }, box, label, enabled, h("button", { type: "submit", text: t("common.search", "Search") }));
  }
  async function taskList(params, g) {
    // The views bar is filled before anything renders (overview.js).
    const [{ list, tasks, last }, viewBar] = await Promise.all([taskRows(params), ext.views ? ext.views(params) : null]);
    const filtered = !!(params.get("q") || params.get("label") || params.get("enabled"));
    const rows = tasks.map((x) => {
      const trig = x.triggers || [];
      const next = trig.filter((y) => y.enabled && y.nextFireAtMs).sort((a, b) => a.nextFireAtMs - b.nextFireAtMs)[0];
      const lr = last(x);
      return h("tr", { "data-task": x.name },
        td(t("tasks.task", "Task"), h("a", { href: "#/tasks/" + encodeURIComponent(x.id) + "/edit", text: x.name }), h("div", { class: "muted mono", text: command(x.spec) }),
          (x.labels || []).length ? h("div", { class: "labels" }, x.labels.map((l) => h("a", { class: "label", href: "#/tasks" + q({ label: l, project: S.control ? params.get("project") : "" }), text: l }))) : null),
        td(t("tasks.enabled", "Enabled"), yesNo(x.enabled)),
        td(t("tasks.schedule", "Schedule"), trig.length ? trig.map((y) => h("div", {}, h("code", { text: y.expression }), " ", h("span", { class: "muted", text: y.timeZone + (y.enabled ? "" : " " + t("tasks.triggerOff", "(off)")) }))) : h("span", { class: "muted", text: t("tasks.manualOnly", "manual only") })),
        td(t("tasks.nextFire", "Next fire"), next ? when(next.nextFireAtMs, next.timeZone) : "—"),
        td(t("tasks.lastRun", "Last run"), lr ? h("a", { href: "#/runs/" + lr.id }, status(lr.status)) : "—"),
        td(t("common.actions", "Actions"), h("div", { class: "bar" },
          h("button", { type: "button", class: "run-now", onclick: () => runNow(x), text: t("tasks.runNow", "Run now") }),
          h("a", { class: "button runs", href: "#/runs" + q({ task: x.id }), text: t("tasks.runs", "Runs") }),
          h("button", { type: "button", class: "toggle", onclick: async () => { await api("POST", "/api/v1/tasks/" + x.id + (x.enabled ? "/disable" : "/enable")); route(); }, text: x.enabled ? t("common.disable", "Disable") : t("common.enable", "Enable") }),
          h("button", { type: "button", class: "danger delete", onclick: async () => {
            if (!confirm(t("tasks.confirmDelete", "Delete task {name}? Its runs stay in the history.", { name: x.name }))) return;
            await api("DELETE", "/api/v1/tasks/" + x.id); route();
          }, text: t("common.delete", "Delete") }))));
    });
    const here = { q: params.get("q"), label: params.get("label"), enabled: params.get("enabled"), project: params.get("project") };
    render(g, h("div", { class: "bar" }, h("h1", { text: t("tasks.title", "Tasks") }), h("a", { class: "button", href: "#/tasks/new", id: "new-task", text: t("tasks.new", "New task") })),
      taskSearch(params),
      viewBar,
      rows.length ? h("table", { class: "cards", id: "tasks" },
        head(t("tasks.task", "Task"), t("tasks.enabled", "Enabled"), t("tasks.schedule", "Schedule"), t("tasks.nextFire", "Next fire"), t("tasks.lastRun", "Last run"), t("common.actions", "Actions")),
        h("tbody", {}, rows)) : h("p", { id: "no-tasks", text: filtered ? t("tasks.noMatch", "No task matches.") : t("tasks.none", "No tasks yet.") }),
      list.total === undefined ? null : h("p", { class: "muted", id: "task-total", text: t("tasks.total", "{n} task(s)", { n: list.total }) }),
      h("div", { class: "bar" }, params.get("cursor") ? h("a", { class: "button", href: "#/tasks" + q(here), text: t("common.firstPage", "First page") }) : null,
        list.nextCursor ? h("a", { class: "button", id: "more-tasks", href: "#/tasks" + q(Object.assign({}, here, { cursor: list.nextCursor })), text: t("tasks.more", "More tasks") }) : null));
  }
  async function runNow(x) {
    const key = "panel-" + Date.now() + "-" + Math.random().toString(36).slice(2);
    const r = await api("POST", "/api/v1/tasks/" + encodeURIComponent(x.id) + "/runs", { idempotencyKey: key });
    location.hash = "#/runs/" + r.id;
  }

  // field: an input with its label and its error slot (data-err = the
  // server's field path).
  function field(label, name, input, hint) {
    input.id = input.id || "f-" + name.replace(/[^a-zA-Z0-9]/g, "-");
    input.setAttribute("data-field", name);
    return h("div", { class: "field" }, h("label", { for: input.id, text: label }), input,
      hint ? h("div", { class: "muted", text: hint }) : null, h("div", { class: "ferr", "data-err": name, role: "alert" }));
  }
  function showFieldError(form, e) {
    const f = e.field || "";
    let slot = null;
    for (let k = f; k; k = k.replace(/(\.[^.[]*|\[[^\]]*\])$/, "")) {
      slot = form.querySelector('[data-err="' + CSS.escape(k) + '"]');
      if (slot) break;
      if (!/[.[]/.test(k)) break;
    }
    if (!slot) { form.querySelector(".formerr").textContent = (f ? f + ": " : "") + e.message; return; }
    slot.textContent = e.message;
    const input = form.querySelector('[data-field="' + CSS.escape(slot.getAttribute("data-err")) + '"]');
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
  }
  // Editing a refused field clears its error: a corrected value must not
  // keep the old message next to it until the next submit.
  function clearFieldErrorOnEdit(form) {
    const clear = (ev) => {
      const el = ev.target.closest && ev.target.closest("[data-field]");
      if (!el || !el.hasAttribute("aria-invalid")) return;
      el.removeAttribute("aria-invalid");
      const slot = form.querySelector('[data-err="' + CSS.escape(el.getAttribute("data-field")) + '"]');
      if (slot) slot.textContent = "";
    };
    form.addEventListener("input", clear); form.addEventListener("change", clear);
  }
  function clearErrors(form) {
    form.querySelectorAll(".ferr,.formerr").forEach((x) => { x.textContent = ""; });
    form.querySelectorAll("[aria-invalid]").forEach((x) => x.removeAttribute("aria-invalid"));
  }

  async function taskForm(ref, g) {
    const tk = ref ? await api("GET", "/api/v1/tasks/" + encodeURIComponent(ref)) : null;
    const sp = (tk && tk.spec) || {};
    const mode = sp.argv ? "argv" : "shell";
    const I = (attrs) => h("input", Object.assign({ type: "text" }, attrs));
    const name = I({ value: tk ? tk.name : "", required: true, autocomplete: "off" });
    let firstProject = "";
    if (S.control && !tk) {
      const ps = await api("GET", "/api/v1/projects?limit=1");
      firstProject = ps.items.length ? ps.items[0].name : "";
    }
    const project = S.control && !tk ? I({ value: firstProject, autocomplete: "off" }) : null;
    const labels = I({ value: tk ? (tk.labels || []).join(", ") : "", autocomplete: "off" });
    const kind = h("select", {}, h("option", { value: "shell", text: t("form.kindShell", "shell command"), selected: mode === "shell" }), h("option", { value: "argv", text: t("form.kindArgv", "program and arguments (argv)"), selected: mode === "argv" }));
    const cmd = h("textarea", { rows: 3, spellcheck: "false" }); cmd.value = sp.shell ? sp.shell.command : "";
    const shell = h("select", {}, ["/bin/sh", "/bin/bash"].map((x) => h("option", { value: x, text: x, selected: sp.shell && sp.shell.shell === x })));
    const file = I({ value: sp.argv ? sp.argv.file : "" });
    const args = h("textarea", { rows: 3, spellcheck: "false" }); args.value = sp.argv ? (sp.argv.args || []).join("\n") : "";
    const env = h("textarea", { rows: 3, spellcheck: "false" }); env.value = Object.entries(sp.environment || {}).map(([k, v]) => k + "=" + v).join("\n");
    const wd = I({ value: sp.workingDirectory || "" });
    // A new task starts with the CLI's defaults: a 24 h timeout and one trigger row.
    const timeout = I({ type: "number", min: 1, value: sp.timeoutMs ? Math.round(sp.timeoutMs / 1000) : 86400 });
    const attempts = I({ type: "number", min: 1, max: 16, value: sp.retry ? sp.retry.maxAttempts : 1 });
    const backoff = I({ type: "number", min: 0, value: sp.retry ? Math.round((sp.retry.backoffBaseMs || 0) / 1000) : 10 });
    const conc = h("select", {}, ["forbid", "allow", "replace"].map((x) => h("option", { value: x, text: t("form.conc." + x, x), selected: (sp.concurrency || "forbid") === x })));
    const shellBox = h("div", {}, field(t("form.command", "Command"), "spec.shell.command", cmd), field(t("form.shell", "Shell"), "spec.shell.shell", shell));
    const argvBox = h("div", {}, field(t("form.program", "Program (absolute path)"), "spec.argv.file", file), field(t("form.args", "Arguments, one per line"), "spec.argv.args", args));
    const sync = () => { shellBox.hidden = kind.value !== "shell"; argvBox.hidden = kind.value !== "argv"; };
    kind.addEventListener("change", sync); sync();

    const trigBox = h("div", { id: "triggers" });
    const trigRows = [];
    const addTrigger = (tr) => {
      const i = trigRows.length;
      const expr = I({ value: tr ? tr.expression : "", placeholder: "30 2 * * *", autocomplete: "off", spellcheck: "false", class: "expr" });
      const zone = I({ value: tr ? tr.timeZone : (Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"), list: "zones", autocomplete: "off", class: "zone" });
      const misfire = h("select", {}, ["skip", "fire_once"].map((x) => h("option", { value: x, text: t("form.misfire." + x, x), selected: tr && tr.misfire === x })));
      const enabled = h("input", { type: "checkbox", checked: !tr || tr.enabled });
      const from = I({ placeholder: t("form.now", "now"), class: "from", inputmode: "numeric", autocomplete: "off", "aria-label": t("form.previewFrom", "preview from date (YYYY-MM-DD)") });
      const preview = h("ol", { class: "preview", "aria-label": t("form.nextFires", "next fire times") });
      const pvErr = h("div", { class: "muted" });
      const row = { tr, expr, zone, misfire, enabled, removed: false };
      let timer = 0;
      const update = () => { clearTimeout(timer); timer = setTimeout(() => previewInto(expr.value, zone.value, from.value, preview, pvErr), 250); };
      expr.addEventListener("input", update); zone.addEventListener("input", update); from.addEventListener("input", update);
      const box = h("div", { class: "trigger", "data-trigger": i },
        h("div", { class: "grid" },
          field(t("form.cron", "Cron expression"), "triggers[" + i + "].expression", expr, t("form.cronHint", "5 or 6 fields, or @daily, @hourly, …")),
          field(t("form.zone", "Time zone"), "triggers[" + i + "].timeZone", zone),
          field(t("form.misfire", "If a fire is missed"), "triggers[" + i + "].misfire", misfire)),
        h("label", {}, enabled, " " + t("form.triggerEnabled", "enabled")),
        h("div", { class: "muted" }, t("form.previewAfter", "Next fire times after") + " ", from, " " + t("form.previewAfterHint", "(YYYY-MM-DD, empty: now):")), preview, pvErr,
        h("button", { type: "button", class: "danger", text: t("form.removeTrigger", "Remove trigger"), onclick: () => { row.removed = true; box.hidden = true; } }));
      trigRows.push(row); trigBox.append(box);
      if (tr) update();
    };
    (tk && tk.triggers || []).forEach(addTrigger);
    if (!tk) addTrigger(null);

    const form = h("form", { id: "task-form", novalidate: true },
      h("h1", { text: tk ? t("form.editTitle", "Edit {name}", { name: tk.name }) : t("tasks.new", "New task") }),
      h("div", { class: "formerr", role: "alert" }),
      project ? field(t("form.project", "Project"), "project", project) : null,
      field(t("form.name", "Name"), "name", name),
      labels ? field(t("form.labels", "Labels, comma-separated"), "labels", labels) : null,
      h("fieldset", {}, h("legend", { text: t("form.whatRuns", "What runs") }), field(t("form.kind", "Kind"), "spec.kind", kind), shellBox, argvBox,
        field(t("form.environment", "Environment, NAME=value per line"), "spec.environment", env),
        field(t("form.workdir", "Working directory"), "spec.workingDirectory", wd)),
      h("fieldset", {}, h("legend", { text: t("form.limits", "Limits") }), h("div", { class: "grid" },
        field(t("form.timeout", "Timeout (seconds)"), "spec.timeoutMs", timeout),
        field(t("form.attempts", "Attempts (1 = no retry)"), "spec.retry.maxAttempts", attempts),
        field(t("form.backoff", "First retry after (seconds)"), "spec.retry.backoffBaseMs", backoff),
        field(t("form.concurrency", "When still running"), "spec.concurrency", conc))),
      h("fieldset", {}, h("legend", { text: t("form.schedule", "Schedule") }), trigBox,
        h("button", { type: "button", id: "add-trigger", text: t("form.addTrigger", "Add trigger"), onclick: () => addTrigger(null) })),
      h("datalist", { id: "zones" }, ["UTC", "Europe/Berlin", "Europe/London", "America/New_York", "America/Los_Angeles", "Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney"].map((z) => h("option", { value: z }))),
      h("div", { class: "bar" }, h("button", { type: "submit", class: "primary", id: "save", text: tk ? t("common.save", "Save") : t("common.create", "Create") }), h("a", { href: "#/tasks", class: "button", text: t("common.cancel", "Cancel") })));

    clearFieldErrorOnEdit(form);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(form);
      const environment = {};
      for (const line of env.value.split("\n")) {
        if (!line.trim()) continue;
        const at = line.indexOf("=");
        if (at < 1) { showFieldError(form, { field: "spec.environment", message: t("form.envLine", "each line must be NAME=value: {line}", { line: JSON.stringify(line) }) }); return; }
        environment[line.slice(0, at)] = line.slice(at + 1);
      }
      const spec = { kind: "qinglong/command@v1", timeoutMs: Math.round(Number(timeout.value) * 1000),
        retry: { maxAttempts: Number(attempts.value), backoffBaseMs: Math.round(Number(backoff.value) * 1000) }, concurrency: conc.value };
      // The cap of the doubling delay is not on the form: keep the task's,
      // never below the first delay (default 1 h, at most 24 h).
      const base = spec.retry.backoffBaseMs;
      spec.retry.backoffMaxMs = Math.min(86400000, Math.max(base, sp.retry ? sp.retry.backoffMaxMs : 3600000));
      if (sp.retry) spec.retry.retryOnLost = sp.retry.retryOnLost;
      if (sp.placement) spec.placement = sp.placement;
      if (kind.value === "shell") spec.shell = { command: cmd.value, shell: shell.value };
      else spec.argv = { file: file.value, args: args.value.split("\n").filter((x) => x !== "") };
      if (Object.keys(environment).length) spec.environment = environment;
      if (wd.value) spec.workingDirectory = wd.value;
      const ls = labels ? labels.value.split(",").map((x) => x.trim()).filter(Boolean) : null;
      // An update replaces the trigger: keep what the form does not show
      // (grace, the cluster's trigger name) from the stored one.
      const trig = (r) => {
        const v = { expression: r.expr.value, timeZone: r.zone.value, misfire: r.misfire.value, enabled: r.enabled.checked };
        if (r.tr && r.tr.graceMs) v.graceMs = r.tr.graceMs;
        if (r.tr && r.tr.name) v.name = r.tr.name;
        return v;
      };
      try {
        let id;
        if (!tk) {
          const body = { name: name.value, spec };
          if (S.control) body.project = project.value;
          if (ls && ls.length) body.labels = ls;
          // Both APIs create the triggers in the task's transaction: all
          // or nothing, errors name triggers[i].field.
          // A row left without an expression is no trigger (a manual-only task).
          const keep = (r) => !r.removed && r.expr.value.trim() !== "";
          body.triggers = trigRows.filter(keep).map(trig);
          // The server numbers inline triggers among the kept rows; map back.
          const kept = trigRows.map((r, i) => [r, i]).filter(([r]) => keep(r)).map(([, i]) => i);
          try { id = (await api("POST", "/api/v1/tasks", body)).id; }
          catch (e) {
            e.field = e.field.replace(/^triggers\[(\d+)\]/, (m, n) => "triggers[" + kept[Number(n)] + "]");
            throw e;
          }
        } else {
          id = tk.id;
          const body = { expectedRevision: tk.revision, name: name.value, spec };
          if (ls) body.labels = ls;
          await api("PUT", "/api/v1/tasks/" + id, body);
          await saveTriggers(id, trigRows, trig);
        }
        location.hash = "#/tasks";
      } catch (e) {
        if (e.status === 401) return;
        showFieldError(form, e);
      }
    });
    render(g, form);
    name.focus();
  }
  // saveTriggers creates, updates or removes the task's triggers one by
  // one; an error names the row it belongs to.
  async function saveTriggers(id, rows, trig) {
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      const base = "/api/v1/tasks/" + id + "/triggers";
      try {
        if (r.tr && r.removed) {
          await api("DELETE", base + "/" + r.tr.id);
        } else if (r.tr) {
          const now = trig(r);
          if (now.expression !== r.tr.expression || now.timeZone !== r.tr.timeZone || now.misfire !== r.tr.misfire || now.enabled !== r.tr.enabled)
            await api("PUT", base + "/" + r.tr.id, Object.assign(now, { expectedRevision: r.tr.revision }));
        } else if (!r.removed && r.expr.value.trim() !== "") {
          await api("POST", base, trig(r));
        }
      } catch (e) {
        if (e.field !== undefined) e.field = "triggers[" + i + "]" + (e.field && !e.field.startsWith("[") ? "." + e.field : e.field);
        throw e;
      }
    }
  }
  // noteText: the server explains DST marks in English; other languages
  // get the catalog's sentence for the kind of mark.
  function noteText(f) {
    if (I18N.lang === "en") return f.note;
    if (f.mark === "gap") return t("form.noteGap", f.note);
    return /second occurrence/.test(f.note) ? t("form.noteRepeat2", f.note) : t("form.noteRepeat1", f.note);
  }
  async function previewInto(expr, zone, from, list, err) {
    err.textContent = "";
    if (!expr.trim()) { list.replaceChildren(); return; }
    let afterMs = "";
    if (from.trim()) {
      const ms = Date.parse(from.trim() + "T00:00:00Z");
      if (isNaN(ms)) { list.replaceChildren(); err.textContent = t("form.previewBadDate", "Preview: the date must be YYYY-MM-DD"); return; }
      afterMs = String(ms);
    }
    try {
      const p = await api("GET", "/api/v1/schedule/preview" + q({ expression: expr, timeZone: zone, count: "8", afterMs }));
      list.replaceChildren(...p.fires.map((f) => h("li", { "data-mark": f.mark || "" },
        h("span", { class: "mono", text: f.local.replace("T", " ") }), " " + t("weekday." + f.weekday, f.weekday) + " " + f.zone,
        f.mark ? h("span", { class: "mark", text: f.mark === "gap" ? t("form.dstGap", "DST gap") : t("form.dstRepeat", "DST repeat") }) : null,
        f.note ? h("div", { class: "muted", text: noteText(f) }) : null)));
    } catch (e) {
      list.replaceChildren();
      err.textContent = t("form.previewError", "Preview: {message}", { message: e.message });
    }
  }

  // ---- pages of other asset files -------------------------------------------
  // Page files (runs.js, overview.js, env.js, …) are served after this
  // file in the same response; they register their page here and use
  // these helpers.
  // Their strings go through t(key, english) with their own catalog
  // (addMessages({en: {...}, "zh-CN": {...}})); the nav link #nav-<name>
  // is labelled by the key nav.<name>.
  const pages = {};
  const ext = {};
  window.ql3Panel = {
    h, td, head, when, status, api, q, render, put, field, showFieldError, clearErrors, clearFieldErrorOnEdit, route: () => route(),
    t, addMessages, ext, APIError, exitText,
    // S is the panel's state: control (which server), gen (the view's
    // generation, see render), timers (cleared when the view changes),
    // follow (the AbortController of a log tail).
    S, TERMINAL, STATUSES,
    lang: () => I18N.lang,
    setLang,
    // For the tests: the catalogs and the keys looked up that the current
    // language lacks.
    catalogs: () => I18N.messages,
    missingKeys: () => Array.from(I18N.missing).sort(),
    // register adds the page "#/<name>…" and its nav link (#nav-<name>),
    // shown when on(S) says so (S.control: which server this is).
    register(name, on, show) { pages[name] = { on, show }; },
  };

  // ---- boot -----------------------------------------------------------------
  async function boot() {
    const st = await api("GET", "/api/v1/session");
    S.server = st.server; S.control = st.server === "ql3-control"; S.authRequired = st.authRequired;
    document.getElementById("product").textContent = st.server;
    document.title = st.server;
    if (!st.signedIn) { showSignIn(""); return; }
    document.getElementById("nav").hidden = false;
    document.getElementById("nav-workers").hidden = !S.control;
    for (const [name, pg] of Object.entries(pages)) { const a = document.getElementById("nav-" + name); if (a) a.hidden = !pg.on(S); }
    document.getElementById("signout").hidden = !S.authRequired;
    await route();
  }
  document.addEventListener("DOMContentLoaded", () => {
    I18N.lang = pickLang();
    translateStatic();
    const sw = document.getElementById("lang");
    if (sw) sw.addEventListener("change", () => setLang(sw.value));
    document.getElementById("signout").addEventListener("click", signOut);
    window.addEventListener("hashchange", route);
    boot().catch((e) => render(S.gen, h("p", { class: "formerr", text: e.message })));
  });
})();
