// ql3 panel: the runs pages (list with a task search, a run with its live
// log) and the control plane's workers page. Served after app.js in the
// same response, plugged in through window.ql3Panel; its strings are in
// messages.js with app.js's (ADR 0050).
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const { h, td, head, when, status, api, q, render, put, t, S, TERMINAL, STATUSES, APIError, exitText } = P;
  const route = () => P.route();

  // ---- runs -----------------------------------------------------------------
  // taskPicker is the runs filter's task field: typing searches the tasks
  // on the server (name, command, label; 20 suggestions), so any of
  // thousands of tasks can be picked, on both servers (ADR 0050, 0057).
  async function taskPicker(params) {
    const cur = params.get("task") || "";
    let shown = cur;
    if (cur) { try { shown = (await api("GET", "/api/v1/tasks/" + encodeURIComponent(cur))).name; } catch (e) { if (e.status === 401) throw e; } }
    const list = h("datalist", { id: "task-suggestions" });
    const input = h("input", { type: "search", name: "task", id: "filter-task", value: shown, list: "task-suggestions", autocomplete: "off", placeholder: t("runs.taskHint", "type to search tasks") });
    let timer = 0, seq = 0;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      const text = input.value.trim();
      if (!text) { list.replaceChildren(); return; }
      timer = setTimeout(async () => {
        const mine = ++seq;
        try {
          const found = await api("GET", "/api/v1/tasks" + q({ q: text, limit: "20" }));
          if (mine === seq) list.replaceChildren(...found.items.map((x) => h("option", { value: x.name })));
        } catch (e) { /* a failed suggestion changes nothing */ }
      }, 200);
    });
    // value: an exact name or id is taken as it is; otherwise the search
    // must find exactly one task.
    const value = async () => {
      const text = input.value.trim();
      if (!text) return "";
      const found = await api("GET", "/api/v1/tasks" + q({ q: text, limit: "2" }));
      const exact = found.items.find((x) => x.name === text || x.id === text);
      if (exact) return exact.id;
      if (found.items.length === 1) return found.items[0].id;
      throw new APIError(400, { field: "task", message: found.items.length ? t("runs.taskMany", "Several tasks match; pick one from the list.") : t("runs.taskNone", "No task matches.") });
    };
    return { input: h("span", {}, input, list), names: {}, value };
  }
  async function runList(params, g) {
    const picker = await taskPicker(params);
    const sel = (name, opts, cur) => h("select", { name, id: "filter-" + name }, h("option", { value: "", text: t("common.any", "any") }), opts.map(([v, l]) => h("option", { value: v, text: l, selected: v === cur })));
    const fStatus = sel("status", STATUSES.map((s) => [s, t("status." + s, s)]), params.get("status") || "");
    const fOrigin = sel("origin", (S.control ? ["cron", "manual", "rerun"] : ["schedule", "manual"]).map((s) => [s, t("origin." + s, s)]), params.get("origin") || "");
    const ferr = h("span", { class: "ferr", "data-err": "task", role: "alert" });
    const filter = h("form", { class: "bar", id: "run-filter", onsubmit: async (ev) => {
      ev.preventDefault(); ferr.textContent = "";
      try { location.hash = "#/runs" + q({ task: await picker.value(), status: fStatus.value, origin: fOrigin.value }); }
      catch (e) { if (e.status !== 401) ferr.textContent = e.message; }
    } }, h("label", {}, t("runs.task", "Task") + " ", picker.input), h("label", {}, t("runs.status", "Status") + " ", fStatus), h("label", {}, t("runs.origin", "Origin") + " ", fOrigin),
    h("button", { type: "submit", text: t("runs.filter", "Filter") }), ferr);
    // The table refreshes in place every 5 s on the first page, leaving
    // the filter form (and whatever the user is choosing there) alone.
    const box = h("div", { id: "runs-box" });
    const here = { task: params.get("task"), status: params.get("status"), origin: params.get("origin") };
    const load = async () => {
      const page = await api("GET", "/api/v1/runs" + q(Object.assign({}, here, { cursor: params.get("cursor"), limit: "50" })));
      const rows = page.items.map((r) => h("tr", {},
        td(t("runs.run", "Run"), h("a", { href: "#/runs/" + r.id, class: "mono", text: r.id.slice(0, 13) })),
        td(t("runs.task", "Task"), h("a", { class: "task-name", href: "#/runs" + q({ task: r.taskId }), text: r.taskName || picker.names[r.taskId] || r.taskId })),
        td(t("runs.status", "Status"), status(r.status)), td(t("runs.origin", "Origin"), t("origin." + r.origin, r.origin)),
        td(t("runs.scheduled", "Scheduled"), when(r.scheduledForMs)), td(t("runs.attempts", "Attempts"), r.attemptCount + "/" + r.maxAttempts),
        td(t("runs.exit", "Exit"), exitText(r.exitCode)),
        td(t("runs.error", "Error"), r.errorClass ? t("error." + r.errorClass, r.errorClass) : r.reason ? t("reason." + r.reason, r.reason) : "")));
      const next = new URLSearchParams(params); if (page.nextCursor) next.set("cursor", page.nextCursor);
      put(box, rows.length ? h("table", { class: "cards", id: "runs" }, head(t("runs.run", "Run"), t("runs.task", "Task"), t("runs.status", "Status"), t("runs.origin", "Origin"), t("runs.scheduled", "Scheduled"), t("runs.attempts", "Attempts"), t("runs.exit", "Exit"), t("runs.error", "Error")), h("tbody", {}, rows)) : h("p", { text: t("runs.none", "No runs match.") }),
        h("div", { class: "bar" }, params.get("cursor") ? h("a", { class: "button", href: "#/runs" + q(here), text: t("common.firstPage", "First page") }) : null,
          page.nextCursor ? h("a", { class: "button", id: "older", href: "#/runs?" + next.toString(), text: t("runs.older", "Older runs") }) : null));
    };
    await load();
    render(g, h("h1", { text: t("runs.title", "Runs") }), filter, box);
    if (g === S.gen && !params.get("cursor")) {
      const timer = setInterval(() => { load().catch(() => clearInterval(timer)); }, 5000);
      S.timers.push(timer);
    }
  }

  async function runDetail(id, g) {
    const pre = h("pre", { class: "log", id: "log", "aria-label": t("run.logOutput", "log output") });
    const logState = h("p", { class: "muted", id: "log-state" });
    const top = h("div");
    const att = h("div");
    const ev = h("div");
    render(g, h("h1", { text: t("run.title", "Run") + " " }, h("span", { class: "mono", text: id })), top, h("h2", { text: t("run.log", "Log") }), logState, pre, h("h2", { text: t("run.attempts", "Attempts") }), att, h("h2", { text: t("run.events", "Events") }), ev);
    let following = 0;
    let offset = 0;
    const draw = async () => {
      const r = await api("GET", "/api/v1/runs/" + encodeURIComponent(id));
      const taskName = r.taskName || (await api("GET", "/api/v1/tasks/" + encodeURIComponent(r.taskId)).catch(() => ({ name: r.taskId }))).name;
      const done = TERMINAL.includes(r.status);
      const actions = h("div", { class: "bar" },
        done ? null : h("button", { type: "button", class: "danger", id: "cancel", text: r.cancelRequestedAtMs ? t("run.cancelRequested", "Cancel requested…") : t("common.cancel", "Cancel"), disabled: !!r.cancelRequestedAtMs, onclick: async () => {
          await api("POST", "/api/v1/runs/" + encodeURIComponent(id) + "/cancel"); draw();
        } }),
        h("button", { type: "button", id: "rerun", text: t("run.again", "Run again"), onclick: async () => {
          const n = await api("POST", "/api/v1/tasks/" + encodeURIComponent(r.taskId) + "/runs", { idempotencyKey: "panel-" + Date.now() + "-" + Math.random().toString(36).slice(2), rerunOf: r.id });
          location.hash = "#/runs/" + n.id;
        } }),
        h("a", { class: "button", href: "#/runs" + q({ task: r.taskId }), text: t("run.ofTask", "Runs of this task") }));
      const w = r.waiting;
      const wait = w ? h("p", { class: "notice", id: "waiting" }, h("strong", { text: t("run.whyWaits", "Why it waits:") + " " }), t("wait." + w.reason, w.reason) + " [" + w.reason + "]",
        " " + t("run.waitCounts", "(live sessions {live}, eligible {eligible}, free slots {free})", { live: w.liveSessions, eligible: w.eligibleSessions, free: w.freeSlots }),
        w.placementMismatch ? " — " + t("run.mismatch", "placement mismatch:") + " " + Object.entries(w.placementMismatch).map(([k, v]) => k + " " + v).join(", ") : "",
        w.notBeforeMs ? " — " + t("run.notBefore", "not before {when}", { when: when(w.notBeforeMs) }) : "") : null;
      put(top, h("dl", { class: "kv" },
        h("dt", { text: t("runs.task", "Task") }), h("dd", {}, h("a", { href: "#/tasks/" + r.taskId + "/edit", id: "run-task", text: taskName })),
        h("dt", { text: t("runs.status", "Status") }), h("dd", { id: "run-status" }, status(r.status)),
        h("dt", { text: t("runs.origin", "Origin") }), h("dd", { text: t("origin." + r.origin, r.origin) }),
        h("dt", { text: t("run.scheduledFor", "Scheduled for") }), h("dd", { text: when(r.scheduledForMs) }),
        h("dt", { text: t("runs.attempts", "Attempts") }), h("dd", { text: t("run.attemptsOf", "{n} of {max}", { n: r.attemptCount, max: r.maxAttempts }) }),
        h("dt", { text: t("run.exitCode", "Exit code") }), h("dd", { text: exitText(r.exitCode) }),
        h("dt", { text: t("run.errorClass", "Error class") }), h("dd", { text: r.errorClass ? t("error." + r.errorClass, r.errorClass) : "—" }),
        h("dt", { text: t("run.reason", "Reason") }), h("dd", { text: r.reason ? t("reason." + r.reason, r.reason) : r.errorMessage || "—" }),
        h("dt", { text: t("run.finished", "Finished") }), h("dd", { text: when(r.finishedAtMs) })), wait, actions);
      const as = r.attempts || [];
      att.replaceChildren(as.length ? h("table", { class: "cards" }, head("#", t("runs.status", "Status"), t("run.started", "Started"), t("run.finished", "Finished"), t("runs.exit", "Exit"), t("run.errorClass", "Error class"), t("run.message", "Message")),
        h("tbody", {}, as.map((a) => h("tr", {}, td("#", String(a.number)), td(t("runs.status", "Status"), status(a.status)), td(t("run.started", "Started"), when(a.startedAtMs)), td(t("run.finished", "Finished"), when(a.finishedAtMs)),
          td(t("runs.exit", "Exit"), exitText(a.exitCode)), td(t("run.errorClass", "Error class"), a.errorClass ? t("error." + a.errorClass, a.errorClass) : "—"), td(t("run.message", "Message"), a.message ? h("span", { class: "mono", text: a.message }) : ""))))) : h("p", { class: "muted", text: t("run.noAttempt", "No attempt yet.") }));
      const evs = await api("GET", "/api/v1/runs/" + encodeURIComponent(id) + "/events?limit=200");
      const items = evs.items || evs;
      ev.replaceChildren(h("ol", {}, items.map((e) => h("li", {}, h("span", { class: "mono", text: when(e.atMs) }), " ", h("strong", { text: t("event." + e.type, e.type) }), " ", h("span", { class: "muted mono", text: e.payload && Object.keys(e.payload).length ? JSON.stringify(e.payload) : "" })))));
      const n = r.attemptCount || (as.length ? as[as.length - 1].number : 0);
      if (n && n !== following && g === S.gen) { following = n; offset = 0; pre.textContent = ""; tail(id, n, done); }
      return done;
    };
    const tail = async (runId, n, done) => {
      if (S.follow) S.follow.abort();
      const ctl = new AbortController(); S.follow = ctl;
      logState.textContent = done ? t("run.logComplete", "Attempt {n} (complete)", { n }) : t("run.logFollowing", "Attempt {n}: following live output…", { n });
      try {
        const r = await fetch("/api/v1/runs/" + encodeURIComponent(runId) + "/attempts/" + n + "/log" + q({ offset: String(offset), follow: "1" }), { credentials: "same-origin", signal: ctl.signal, cache: "no-store" });
        if (!r.ok) { logState.textContent = t("run.logHTTP", "Log: HTTP {status}", { status: r.status }); return; }
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
        if (S.follow === ctl) { logState.textContent = t("run.logDone", "Attempt {n}: log complete ({bytes} bytes)", { n, bytes: offset }); logState.setAttribute("data-complete", "true"); S.follow = null; draw(); }
      } catch (e) {
        if (e.name !== "AbortError") logState.textContent = t("run.logError", "Log: {message}", { message: e.message });
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
    const state = (s) => !s ? "no_session" : s.expired ? "expired" : s.status;
    const rows = ws.items.map((w) => {
      const s = w.session;
      return h("tr", {},
        td(t("workers.worker", "Worker"), h("strong", { text: w.name }), h("div", { class: "muted mono", text: w.id })),
        td(t("workers.status", "Status"), t("worker." + w.status, w.status)),
        td(t("workers.session", "Session"), s ? h("span", {}, status(state(s)), " " + t("workers.gen", "gen {n}", { n: s.generation })) : t("status.no_session", "no session")),
        td(t("workers.capacity", "Capacity"), s ? String(s.capacity) : "—"),
        td(t("workers.leases", "Live leases"), s ? String(s.liveLeases) : "—"),
        td(t("workers.heartbeat", "Heartbeat"), s ? when(s.heartbeatAtMs) : "—"),
        td(t("workers.version", "Version"), s && s.agentVersion || "—"),
        td(t("workers.capabilities", "Capabilities"), s && s.capabilities ? h("code", { text: JSON.stringify(s.capabilities) }) : "—"));
    });
    render(g, h("h1", { text: t("workers.title", "Workers") }),
      rows.length ? h("table", { class: "cards", id: "workers" }, head(t("workers.worker", "Worker"), t("workers.status", "Status"), t("workers.session", "Session"), t("workers.capacity", "Capacity"), t("workers.leases", "Live leases"), t("workers.heartbeat", "Heartbeat"), t("workers.version", "Version"), t("workers.capabilities", "Capabilities")), h("tbody", {}, rows))
        : h("p", { text: t("workers.none", "No workers registered (ql3-control worker register …).") }));
    if (g === S.gen) S.timers.push(setInterval(() => { if (location.hash.startsWith("#/workers")) route(); }, 5000));
  }

  P.register("runs", () => true, (p, params, g) => (p[0] ? runDetail(decodeURIComponent(p[0]), g) : runList(params, g)));
  P.register("workers", (S) => S.control, (p, params, g) => workerList(g));
})();
