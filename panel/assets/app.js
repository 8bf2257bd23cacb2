// ql3 panel: a small single-page client of the edge API and the admin API
// (same shapes). No dependencies, no inline code (the CSP forbids it), the
// admin token never touches page storage: sign-in turns it into an
// HttpOnly session cookie the page cannot read.
"use strict";
(function () {
  const S = { server: "", control: false, authRequired: true, follow: null, timers: [], gen: 0 };
  const main = () => document.getElementById("main");
  const TERMINAL = ["succeeded", "failed", "timed_out", "cancelled", "skipped", "lost", "abandoned"];
  const STATUSES = ["created", "queued", "retry_wait", "dispatching", "running", "succeeded", "failed", "timed_out", "cancelled", "skipped", "lost", "abandoned"];


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
  function when(ms, zone) {
    if (!ms) return "—";
    try { return new Date(ms).toLocaleString(undefined, zone ? { timeZone: zone, timeZoneName: "short" } : {}); }
    catch (e) { return new Date(ms).toLocaleString(); }
  }
  function status(st) { return h("span", { class: "status st-" + st, text: st }); }
  function td(label, ...kids) { return h("td", { "data-label": label }, ...kids); }
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
    if (r.status === 401 && path !== "/api/v1/session") { showSignIn("Your session ended; sign in again."); throw new APIError(401, b); }
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
    h("h1", { text: "Sign in" }),
    h("p", { class: "notice", text: msg || "" }),
    h("label", { for: "token", text: "Admin token" }), tok, err,
    h("p", { class: "muted", text: "The token is exchanged for a session cookie the page cannot read; it is not stored in the browser." }),
    h("button", { class: "primary", type: "submit", id: "signin-submit", text: "Sign in" }));
    render(S.gen, form);
    tok.focus();
  }
  async function signOut() {
    clearTimers();
    await api("DELETE", "/api/v1/session");
    showSignIn("Signed out.");
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
      if (p[0] === "runs" && p[1]) return await runDetail(decodeURIComponent(p[1]), g);
      if (p[0] === "runs") return await runList(params, g);
      if (p[0] === "workers" && S.control) return await workerList(g);
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
  async function taskList(params, g) {
    const list = await api("GET", "/api/v1/tasks" + q({ limit: "50", cursor: params.get("cursor") }));
    const runs = await api("GET", "/api/v1/runs?limit=200");
    const last = {};
    for (const r of runs.items) if (!last[r.taskId]) last[r.taskId] = r;
    const details = await Promise.all(list.items.map((t) => api("GET", "/api/v1/tasks/" + encodeURIComponent(t.id))));
    const rows = details.map((t) => {
      const trig = t.triggers || [];
      const next = trig.filter((x) => x.enabled && x.nextFireAtMs).sort((a, b) => a.nextFireAtMs - b.nextFireAtMs)[0];
      const lr = last[t.id];
      return h("tr", { "data-task": t.name },
        td("Task", h("a", { href: "#/tasks/" + encodeURIComponent(t.id) + "/edit", text: t.name }), h("div", { class: "muted mono", text: command(t.spec) })),
        td("Enabled", t.enabled ? "yes" : "no"),
        td("Schedule", trig.length ? trig.map((x) => h("div", {}, h("code", { text: x.expression }), " ", h("span", { class: "muted", text: x.timeZone + (x.enabled ? "" : " (off)") }))) : h("span", { class: "muted", text: "manual only" })),
        td("Next fire", next ? when(next.nextFireAtMs, next.timeZone) : "—"),
        td("Last run", lr ? h("a", { href: "#/runs/" + lr.id }, status(lr.status)) : "—"),
        td("Actions", h("div", { class: "bar" },
          h("button", { type: "button", class: "run-now", onclick: () => runNow(t) , text: "Run now" }),
          h("button", { type: "button", class: "toggle", onclick: async () => { await api("POST", "/api/v1/tasks/" + t.id + (t.enabled ? "/disable" : "/enable")); route(); }, text: t.enabled ? "Disable" : "Enable" }),
          h("button", { type: "button", class: "danger delete", onclick: async () => {
            if (!confirm("Delete task " + t.name + "? Its runs stay in the history.")) return;
            await api("DELETE", "/api/v1/tasks/" + t.id); route();
          }, text: "Delete" }))));
    });
    render(g, h("div", { class: "bar" }, h("h1", { text: "Tasks" }), h("a", { class: "button", href: "#/tasks/new", id: "new-task", text: "New task" })),
      rows.length ? h("table", { class: "cards", id: "tasks" },
        h("thead", {}, h("tr", {}, ["Task", "Enabled", "Schedule", "Next fire", "Last run", "Actions"].map((x) => h("th", { text: x })))),
        h("tbody", {}, rows)) : h("p", { text: "No tasks yet." }),
      h("div", { class: "bar" }, params.get("cursor") ? h("a", { class: "button", href: "#/tasks", text: "First page" }) : null,
        list.nextCursor ? h("a", { class: "button", id: "more-tasks", href: "#/tasks?" + q({ cursor: list.nextCursor }).slice(1), text: "More tasks" }) : null));
  }
  async function runNow(t) {
    const key = "panel-" + Date.now() + "-" + Math.random().toString(36).slice(2);
    const r = await api("POST", "/api/v1/tasks/" + encodeURIComponent(t.id) + "/runs", { idempotencyKey: key });
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
    const t = ref ? await api("GET", "/api/v1/tasks/" + encodeURIComponent(ref)) : null;
    const sp = (t && t.spec) || {};
    const mode = sp.argv ? "argv" : "shell";
    const I = (attrs) => h("input", Object.assign({ type: "text" }, attrs));
    const name = I({ value: t ? t.name : "", required: true, autocomplete: "off" });
    let firstProject = "";
    if (S.control && !t) {
      const ps = await api("GET", "/api/v1/projects?limit=1");
      firstProject = ps.items.length ? ps.items[0].name : "";
    }
    const project = S.control && !t ? I({ value: firstProject, autocomplete: "off" }) : null;
    const kind = h("select", {}, h("option", { value: "shell", text: "shell command", selected: mode === "shell" }), h("option", { value: "argv", text: "program and arguments (argv)", selected: mode === "argv" }));
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
    const conc = h("select", {}, ["forbid", "allow", "replace"].map((x) => h("option", { value: x, text: x, selected: (sp.concurrency || "forbid") === x })));
    const shellBox = h("div", {}, field("Command", "spec.shell.command", cmd), field("Shell", "spec.shell.shell", shell));
    const argvBox = h("div", {}, field("Program (absolute path)", "spec.argv.file", file), field("Arguments, one per line", "spec.argv.args", args));
    const sync = () => { shellBox.hidden = kind.value !== "shell"; argvBox.hidden = kind.value !== "argv"; };
    kind.addEventListener("change", sync); sync();

    const trigBox = h("div", { id: "triggers" });
    const trigRows = [];
    const addTrigger = (tr) => {
      const i = trigRows.length;
      const expr = I({ value: tr ? tr.expression : "", placeholder: "30 2 * * *", autocomplete: "off", spellcheck: "false", class: "expr" });
      const zone = I({ value: tr ? tr.timeZone : (Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"), list: "zones", autocomplete: "off", class: "zone" });
      const misfire = h("select", {}, ["skip", "fire_once"].map((x) => h("option", { value: x, text: x, selected: tr && tr.misfire === x })));
      const enabled = h("input", { type: "checkbox", checked: !tr || tr.enabled });
      const from = I({ placeholder: "now", class: "from", inputmode: "numeric", autocomplete: "off", "aria-label": "preview from date (YYYY-MM-DD)" });
      const preview = h("ol", { class: "preview", "aria-label": "next fire times" });
      const pvErr = h("div", { class: "muted" });
      const row = { tr, expr, zone, misfire, enabled, removed: false };
      let timer = 0;
      const update = () => { clearTimeout(timer); timer = setTimeout(() => previewInto(expr.value, zone.value, from.value, preview, pvErr), 250); };
      expr.addEventListener("input", update); zone.addEventListener("input", update); from.addEventListener("input", update);
      const box = h("div", { class: "trigger", "data-trigger": i },
        h("div", { class: "grid" },
          field("Cron expression", "triggers[" + i + "].expression", expr, "5 or 6 fields, or @daily, @hourly, …"),
          field("Time zone", "triggers[" + i + "].timeZone", zone),
          field("If a fire is missed", "triggers[" + i + "].misfire", misfire)),
        h("label", {}, enabled, " enabled"),
        h("div", { class: "muted" }, "Next fire times after ", from, " (YYYY-MM-DD, empty: now):"), preview, pvErr,
        h("button", { type: "button", class: "danger", text: "Remove trigger", onclick: () => { row.removed = true; box.hidden = true; } }));
      trigRows.push(row); trigBox.append(box);
      if (tr) update();
    };
    (t && t.triggers || []).forEach(addTrigger);
    if (!t) addTrigger(null);

    const form = h("form", { id: "task-form", novalidate: true },
      h("h1", { text: t ? "Edit " + t.name : "New task" }),
      h("div", { class: "formerr", role: "alert" }),
      project ? field("Project", "project", project) : null,
      field("Name", "name", name),
      h("fieldset", {}, h("legend", { text: "What runs" }), field("Kind", "spec.kind", kind), shellBox, argvBox,
        field("Environment, NAME=value per line", "spec.environment", env),
        field("Working directory", "spec.workingDirectory", wd)),
      h("fieldset", {}, h("legend", { text: "Limits" }), h("div", { class: "grid" },
        field("Timeout (seconds)", "spec.timeoutMs", timeout),
        field("Attempts (1 = no retry)", "spec.retry.maxAttempts", attempts),
        field("First retry after (seconds)", "spec.retry.backoffBaseMs", backoff),
        field("When still running", "spec.concurrency", conc))),
      h("fieldset", {}, h("legend", { text: "Schedule" }), trigBox,
        h("button", { type: "button", id: "add-trigger", text: "Add trigger", onclick: () => addTrigger(null) })),
      h("datalist", { id: "zones" }, ["UTC", "Europe/Berlin", "Europe/London", "America/New_York", "America/Los_Angeles", "Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney"].map((z) => h("option", { value: z }))),
      h("div", { class: "bar" }, h("button", { type: "submit", class: "primary", id: "save", text: t ? "Save" : "Create" }), h("a", { href: "#/tasks", class: "button", text: "Cancel" })));

    clearFieldErrorOnEdit(form);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(form);
      const environment = {};
      for (const line of env.value.split("\n")) {
        if (!line.trim()) continue;
        const at = line.indexOf("=");
        if (at < 1) { showFieldError(form, { field: "spec.environment", message: "each line must be NAME=value: " + JSON.stringify(line) }); return; }
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
        if (!t) {
          const body = { name: name.value, spec };
          if (S.control) body.project = project.value;
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
          id = t.id;
          await api("PUT", "/api/v1/tasks/" + id, { expectedRevision: t.revision, name: name.value, spec });
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
  async function previewInto(expr, zone, from, list, err) {
    err.textContent = "";
    if (!expr.trim()) { list.replaceChildren(); return; }
    let afterMs = "";
    if (from.trim()) {
      const t = Date.parse(from.trim() + "T00:00:00Z");
      if (isNaN(t)) { list.replaceChildren(); err.textContent = "Preview: the date must be YYYY-MM-DD"; return; }
      afterMs = String(t);
    }
    try {
      const p = await api("GET", "/api/v1/schedule/preview" + q({ expression: expr, timeZone: zone, count: "8", afterMs }));
      list.replaceChildren(...p.fires.map((f) => h("li", { "data-mark": f.mark || "" },
        h("span", { class: "mono", text: f.local.replace("T", " ") }), " " + f.weekday + " " + f.zone,
        f.mark ? h("span", { class: "mark", text: f.mark === "gap" ? "DST gap" : "DST repeat" }) : null,
        f.note ? h("div", { class: "muted", text: f.note }) : null)));
    } catch (e) {
      list.replaceChildren();
      err.textContent = "Preview: " + e.message;
    }
  }

  // ---- runs -----------------------------------------------------------------
  async function runList(params, g) {
    const tasks = await api("GET", "/api/v1/tasks?limit=100");
    const names = {}; tasks.items.forEach((t) => { names[t.id] = t.name; });
    const sel = (name, opts, cur) => h("select", { name, id: "filter-" + name }, h("option", { value: "", text: "any" }), opts.map(([v, l]) => h("option", { value: v, text: l, selected: v === cur })));
    const fTask = sel("task", tasks.items.map((t) => [t.id, t.name]), params.get("task") || "");
    const fStatus = sel("status", STATUSES.map((s) => [s, s]), params.get("status") || "");
    const fOrigin = sel("origin", (S.control ? ["cron", "manual", "rerun"] : ["schedule", "manual"]).map((s) => [s, s]), params.get("origin") || "");
    const filter = h("form", { class: "bar", id: "run-filter", onsubmit: (ev) => {
      ev.preventDefault();
      location.hash = "#/runs" + q({ task: fTask.value, status: fStatus.value, origin: fOrigin.value });
    } }, h("label", {}, "Task ", fTask), h("label", {}, "Status ", fStatus), h("label", {}, "Origin ", fOrigin), h("button", { type: "submit", text: "Filter" }));
    // The table refreshes in place every 5 s on the first page, leaving
    // the filter form (and whatever the user is choosing there) alone.
    const box = h("div", { id: "runs-box" });
    const load = async () => {
      const page = await api("GET", "/api/v1/runs" + q({ task: params.get("task"), status: params.get("status"), origin: params.get("origin"), cursor: params.get("cursor"), limit: "50" }));
      const rows = page.items.map((r) => h("tr", {},
        td("Run", h("a", { href: "#/runs/" + r.id, class: "mono", text: r.id.slice(0, 13) })),
        td("Task", names[r.taskId] || r.taskId), td("Status", status(r.status)), td("Origin", r.origin),
        td("Scheduled", when(r.scheduledForMs)), td("Attempts", r.attemptCount + "/" + r.maxAttempts),
        td("Exit", r.exitCode === undefined || r.exitCode === null ? "—" : String(r.exitCode)),
        td("Error", r.errorClass || r.reason || "")));
      const next = new URLSearchParams(params); if (page.nextCursor) next.set("cursor", page.nextCursor);
      put(box, rows.length ? h("table", { class: "cards", id: "runs" }, h("thead", {}, h("tr", {}, ["Run", "Task", "Status", "Origin", "Scheduled", "Attempts", "Exit", "Error"].map((x) => h("th", { text: x })))), h("tbody", {}, rows)) : h("p", { text: "No runs match." }),
        h("div", { class: "bar" }, params.get("cursor") ? h("a", { class: "button", href: "#/runs" + q({ task: params.get("task"), status: params.get("status"), origin: params.get("origin") }), text: "First page" }) : null,
          page.nextCursor ? h("a", { class: "button", id: "older", href: "#/runs?" + next.toString(), text: "Older runs" }) : null));
    };
    await load();
    render(g, h("h1", { text: "Runs" }), filter, box);
    if (g === S.gen && !params.get("cursor")) {
      const timer = setInterval(() => { load().catch(() => clearInterval(timer)); }, 5000);
      S.timers.push(timer);
    }
  }

  async function runDetail(id, g) {
    const pre = h("pre", { class: "log", id: "log", "aria-label": "log output" });
    const logState = h("p", { class: "muted", id: "log-state" });
    const head = h("div");
    const att = h("div");
    const ev = h("div");
    render(g, h("h1", { text: "Run " }, h("span", { class: "mono", text: id })), head, h("h2", { text: "Log" }), logState, pre, h("h2", { text: "Attempts" }), att, h("h2", { text: "Events" }), ev);
    let following = 0;
    let offset = 0;
    const draw = async () => {
      const r = await api("GET", "/api/v1/runs/" + encodeURIComponent(id));
      const task = await api("GET", "/api/v1/tasks/" + encodeURIComponent(r.taskId)).catch(() => ({ name: r.taskId }));
      const done = TERMINAL.includes(r.status);
      const actions = h("div", { class: "bar" },
        done ? null : h("button", { type: "button", class: "danger", id: "cancel", text: r.cancelRequestedAtMs ? "Cancel requested…" : "Cancel", disabled: !!r.cancelRequestedAtMs, onclick: async () => {
          await api("POST", "/api/v1/runs/" + encodeURIComponent(id) + "/cancel"); draw();
        } }),
        h("button", { type: "button", id: "rerun", text: "Run again", onclick: async () => {
          const n = await api("POST", "/api/v1/tasks/" + encodeURIComponent(r.taskId) + "/runs", { idempotencyKey: "panel-" + Date.now() + "-" + Math.random().toString(36).slice(2), rerunOf: r.id });
          location.hash = "#/runs/" + n.id;
        } }),
        h("a", { class: "button", href: "#/runs" + q({ task: r.taskId }), text: "Runs of this task" }));
      const WHY = { no_live_session: "no worker session is online", placement_mismatch: "no online worker satisfies the task's placement",
        no_free_capacity: "every eligible worker is at capacity", waiting_for_pull: "an eligible worker has room; its next pull takes it",
        retry_backoff: "it waits for its retry time", held_by_concurrency: "an older Run of the task has not ended", cancelling: "a cancel is being carried out" };
      const wait = r.waiting ? h("p", { class: "notice", id: "waiting" }, h("strong", { text: "Why it waits: " }), (WHY[r.waiting.reason] || r.waiting.reason) + " [" + r.waiting.reason + "]",
        " (live sessions " + r.waiting.liveSessions + ", eligible " + r.waiting.eligibleSessions + ", free slots " + r.waiting.freeSlots + ")",
        r.waiting.placementMismatch ? " — placement mismatch: " + Object.entries(r.waiting.placementMismatch).map(([k, v]) => k + " " + v).join(", ") : "",
        r.waiting.notBeforeMs ? " — not before " + when(r.waiting.notBeforeMs) : "") : null;
      put(head, h("dl", { class: "kv" },
        h("dt", { text: "Task" }), h("dd", {}, h("a", { href: "#/tasks/" + r.taskId + "/edit", text: task.name })),
        h("dt", { text: "Status" }), h("dd", { id: "run-status" }, status(r.status)),
        h("dt", { text: "Origin" }), h("dd", { text: r.origin }),
        h("dt", { text: "Scheduled for" }), h("dd", { text: when(r.scheduledForMs) }),
        h("dt", { text: "Attempts" }), h("dd", { text: r.attemptCount + " of " + r.maxAttempts }),
        h("dt", { text: "Exit code" }), h("dd", { text: r.exitCode === undefined || r.exitCode === null ? "—" : String(r.exitCode) }),
        h("dt", { text: "Error class" }), h("dd", { text: r.errorClass || "—" }),
        h("dt", { text: "Reason" }), h("dd", { text: r.reason || r.errorMessage || "—" }),
        h("dt", { text: "Finished" }), h("dd", { text: when(r.finishedAtMs) })), wait, actions);
      const as = r.attempts || [];
      att.replaceChildren(as.length ? h("table", { class: "cards" }, h("thead", {}, h("tr", {}, ["#", "Status", "Started", "Finished", "Exit", "Error class", "Message"].map((x) => h("th", { text: x })))),
        h("tbody", {}, as.map((a) => h("tr", {}, td("#", String(a.number)), td("Status", status(a.status)), td("Started", when(a.startedAtMs)), td("Finished", when(a.finishedAtMs)),
          td("Exit", a.exitCode === undefined || a.exitCode === null ? "—" : String(a.exitCode)), td("Error class", a.errorClass || "—"), td("Message", a.message || ""))))) : h("p", { class: "muted", text: "No attempt yet." }));
      const evs = await api("GET", "/api/v1/runs/" + encodeURIComponent(id) + "/events?limit=200");
      const items = evs.items || evs;
      ev.replaceChildren(h("ol", {}, items.map((e) => h("li", {}, h("span", { class: "mono", text: when(e.atMs) }), " ", h("strong", { text: e.type }), " ", h("span", { class: "muted mono", text: e.payload && Object.keys(e.payload).length ? JSON.stringify(e.payload) : "" })))));
      const n = r.attemptCount || (as.length ? as[as.length - 1].number : 0);
      if (n && n !== following && g === S.gen) { following = n; offset = 0; pre.textContent = ""; tail(id, n, done); }
      if (done) logState.textContent = logState.textContent.replace("following", "finished");
      return done;
    };
    const tail = async (runId, n, done) => {
      if (S.follow) S.follow.abort();
      const ctl = new AbortController(); S.follow = ctl;
      logState.textContent = done ? "Attempt " + n + " (complete)" : "Attempt " + n + ": following live output…";
      try {
        const r = await fetch("/api/v1/runs/" + encodeURIComponent(runId) + "/attempts/" + n + "/log" + q({ offset: String(offset), follow: "1" }), { credentials: "same-origin", signal: ctl.signal, cache: "no-store" });
        if (!r.ok) { logState.textContent = "Log: HTTP " + r.status; return; }
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        for (;;) {
          const { value, done: end } = await reader.read();
          if (end) break;
          offset += value.length;
          pre.append(dec.decode(value, { stream: true }));
          pre.scrollTop = pre.scrollHeight;
        }
        pre.append(dec.decode());
        if (S.follow === ctl) { logState.textContent = "Attempt " + n + ": log complete (" + offset + " bytes)"; logState.setAttribute("data-complete", "true"); S.follow = null; draw(); }
      } catch (e) {
        if (e.name !== "AbortError") logState.textContent = "Log: " + e.message;
      }
    };
    const done = await draw();
    if (!done) {
      const timer = setInterval(async () => { try { if (await draw()) clearInterval(timer); } catch (e) { clearInterval(timer); } }, 1500);
      if (g === S.gen) S.timers.push(timer);
    }
  }

  // ---- workers (control plane) ---------------------------------------------
  async function workerList(g) {
    const ws = await api("GET", "/api/v1/workers?limit=200");
    const state = (s) => !s ? "no session" : s.expired ? "expired" : s.status;
    const rows = ws.items.map((w) => {
      const s = w.session;
      return h("tr", {},
        td("Worker", h("strong", { text: w.name }), h("div", { class: "muted mono", text: w.id })),
        td("Status", w.status),
        td("Session", s ? h("span", {}, status(state(s)), " gen " + s.generation) : "no session"),
        td("Capacity", s ? String(s.capacity) : "—"),
        td("Live leases", s ? String(s.liveLeases) : "—"),
        td("Heartbeat", s ? when(s.heartbeatAtMs) : "—"),
        td("Version", s && s.agentVersion || "—"),
        td("Capabilities", s && s.capabilities ? h("code", { text: JSON.stringify(s.capabilities) }) : "—"));
    });
    render(g, h("h1", { text: "Workers" }),
      rows.length ? h("table", { class: "cards", id: "workers" }, h("thead", {}, h("tr", {}, ["Worker", "Status", "Session", "Capacity", "Live leases", "Heartbeat", "Version", "Capabilities"].map((x) => h("th", { text: x })))), h("tbody", {}, rows))
        : h("p", { text: "No workers registered (ql3-control worker register …)." }));
    if (g === S.gen) S.timers.push(setInterval(() => { if (location.hash.startsWith("#/workers")) route(); }, 5000));
  }

  // ---- pages of other asset files -------------------------------------------
  // env.js (the env store page) is served after this file in the same
  // response; it registers its page here and uses these helpers.
  const pages = {};
  window.ql3Panel = {
    h, td, when, status, api, q, render, put, field, showFieldError, clearErrors, clearFieldErrorOnEdit, route: () => route(),
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
    document.getElementById("signout").addEventListener("click", signOut);
    window.addEventListener("hashchange", route);
    boot().catch((e) => render(S.gen, h("p", { class: "formerr", text: e.message })));
  });
})();
