// ql3 panel: the overview page (ADR 0050): runs by status, the failures
// of the last 24 hours with their tasks' names, the next fires, and on the
// control plane the workers online. One request (GET /api/v1/overview);
// served after app.js in the same response, plugged in through
// window.ql3Panel.
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const { h, td, head, when, status, api, q, render } = P;
  const t = P.t || ((key, english) => english);
  const fill = (s, vars) => s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));

  function counts(id, title, byStatus) {
    const entries = Object.entries(byStatus || {}).filter(([, n]) => n > 0);
    return h("section", { class: "card", id },
      h("h2", { text: title }),
      entries.length ? h("ul", { class: "counts" }, entries.map(([st, n]) => h("li", { "data-status": st },
        h("a", { href: "#/runs" + q({ status: st }) }, status(st)), " ", h("strong", { text: String(n) }))))
        : h("p", { class: "muted", text: t("overview.nothing", "nothing") }));
  }

  async function show(p, params, g) {
    const o = await api("GET", "/api/v1/overview");
    const tk = o.tasks || {};
    const fails = (o.failures && o.failures.recent) || [];
    const fires = o.nextFires || [];
    const cards = h("div", { class: "cards-row" },
      h("section", { class: "card", id: "ov-tasks" },
        h("h2", { text: t("overview.tasks", "Tasks") }),
        h("p", {}, h("a", { href: "#/tasks", text: fill(t("overview.taskCounts", "{total} tasks: {enabled} enabled, {disabled} disabled"), { total: tk.total || 0, enabled: tk.enabled || 0, disabled: tk.disabled || 0 }) }))),
      counts("ov-active", t("overview.active", "Now"), o.runs && o.runs.active),
      counts("ov-day", t("overview.lastDay", "Finished in the last 24 h"), o.runs && o.runs.last24h),
      o.workers ? h("section", { class: "card", id: "ov-workers" }, h("h2", { text: t("overview.workers", "Workers") }),
        h("p", {}, h("a", { href: "#/workers", text: fill(t("overview.workersOnline", "{online} of {total} online"), { online: o.workers.online || 0, total: o.workers.total || 0 }) }))) : null);
    const failTable = fails.length ? h("table", { class: "cards", id: "ov-failures" },
      head(t("overview.when", "When"), t("overview.task", "Task"), t("overview.status", "Status"), t("overview.error", "Error")),
      h("tbody", {}, fails.map((r) => h("tr", {},
        td(t("overview.when", "When"), h("a", { href: "#/runs/" + r.id, text: when(r.finishedAtMs || r.createdAtMs) })),
        td(t("overview.task", "Task"), h("a", { class: "task-name", href: "#/runs" + q({ task: r.taskId }), text: r.taskName || r.taskId })),
        td(t("overview.status", "Status"), status(r.status)),
        td(t("overview.error", "Error"), r.errorClass ? t("error." + r.errorClass, r.errorClass) : r.reason ? t("reason." + r.reason, r.reason) : "")))))
      : h("p", { class: "muted", id: "ov-no-failures", text: t("overview.noFailures", "No failures in the last 24 hours.") });
    const fireTable = fires.length ? h("table", { class: "cards", id: "ov-next" },
      head(t("overview.at", "At"), t("overview.task", "Task"), t("overview.cron", "Cron")),
      h("tbody", {}, fires.map((f) => h("tr", {},
        td(t("overview.at", "At"), when(f.atMs, f.timeZone)),
        td(t("overview.task", "Task"), h("a", { href: "#/tasks/" + encodeURIComponent(f.taskId) + "/edit", text: f.taskName })),
        td(t("overview.cron", "Cron"), h("code", { text: f.expression }), " ", h("span", { class: "muted", text: f.timeZone }))))))
      : h("p", { class: "muted", text: t("overview.noFires", "Nothing is scheduled.") });
    render(g, h("h1", { text: t("overview.title", "Overview") }), cards,
      h("h2", { text: fill(t("overview.failures", "Failures in the last 24 h: {n}"), { n: (o.failures && o.failures.count) || 0 }) }), failTable,
      h("h2", { text: t("overview.next", "Next fires") }), fireTable);
  }

  // views is the task list's bar of saved filters (QingLong's views): one
  // link each, a delete button, and "save" for the filter on screen. On
  // the control plane views belong to a project: the one on screen
  // (?project=), else the first. It resolves with the bar filled, and the
  // list renders only then: a bar that filled in later pushed the table
  // down under a pointer already on its way to a row.
  async function views(params) {
    const bar = h("div", { class: "bar views", id: "views" });
    const cur = { q: params.get("q") || "", label: params.get("label") || "", enabled: params.get("enabled") || "" };
    const act = (fn) => async () => {
      try { await fn(); } catch (e) { if (e.status !== 401) alert(e.message); return; }
      P.route();
    };
    try {
      let project = "";
      if (P.S && P.S.control) {
        project = params.get("project") || "";
        if (!project) {
          const ps = await api("GET", "/api/v1/projects?limit=1");
          if (!ps.items.length) return bar;
          project = ps.items[0].name;
        }
      }
      const vs = await api("GET", "/api/v1/views" + q({ project }));
      const items = vs.items.map((v) => h("span", { class: "view", "data-view": v.name },
        h("a", { class: "button", href: "#/tasks" + q({ q: v.filter.q, label: v.filter.label, enabled: v.filter.enabled, project: params.get("project") }), text: v.name }),
        h("button", { type: "button", class: "danger delete-view", "aria-label": fill(t("views.delete", "Delete view {name}"), { name: v.name }), text: "×",
          onclick: act(async () => { if (confirm(fill(t("views.delete", "Delete view {name}"), { name: v.name }) + "?")) await api("DELETE", "/api/v1/views/" + encodeURIComponent(v.id)); }) })));
      const save = cur.q || cur.label || cur.enabled ? h("button", { type: "button", id: "save-view", text: t("views.save", "Save as view"),
        onclick: act(async () => {
          const name = prompt(t("views.name", "Name of the view"));
          const body = { name, filter: { q: cur.q, label: cur.label, enabled: cur.enabled } };
          if (project) body.project = project;
          if (name) await api("POST", "/api/v1/views", body);
        }) }) : null;
      bar.replaceChildren(...[items.length ? h("span", { class: "muted", text: t("views.title", "Views:") }) : null, ...items, save].filter(Boolean));
    } catch (e) {
      if (e.status !== 401) bar.textContent = e.message; // the list still shows
    }
    return bar;
  }
  if (P.ext) P.ext.views = views;

  // The page's strings in English and Chinese.
  if (P.addMessages) P.addMessages({
    "en": {
      "overview.active": "Now",
      "overview.at": "At",
      "overview.cron": "Cron",
      "overview.error": "Error",
      "overview.failures": "Failures in the last 24 h: {n}",
      "overview.lastDay": "Finished in the last 24 h",
      "overview.next": "Next fires",
      "overview.noFailures": "No failures in the last 24 hours.",
      "overview.noFires": "Nothing is scheduled.",
      "overview.nothing": "nothing",
      "overview.status": "Status",
      "overview.task": "Task",
      "overview.taskCounts": "{total} tasks: {enabled} enabled, {disabled} disabled",
      "overview.tasks": "Tasks",
      "overview.title": "Overview",
      "overview.when": "When",
      "overview.workers": "Workers",
      "overview.workersOnline": "{online} of {total} online",
      "views.delete": "Delete view {name}",
      "views.name": "Name of the view",
      "views.save": "Save as view",
      "views.title": "Views:"
    },
    "zh-CN": {
      "overview.active": "当前",
      "overview.at": "时间",
      "overview.cron": "定时规则",
      "overview.error": "错误",
      "overview.failures": "最近 24 小时失败：{n}",
      "overview.lastDay": "最近 24 小时结束",
      "overview.next": "即将触发",
      "overview.noFailures": "最近 24 小时没有失败。",
      "overview.noFires": "没有计划中的触发。",
      "overview.nothing": "无",
      "overview.status": "状态",
      "overview.task": "任务",
      "overview.taskCounts": "共 {total} 个任务：{enabled} 个启用，{disabled} 个禁用",
      "overview.tasks": "任务",
      "overview.title": "概览",
      "overview.when": "时间",
      "overview.workers": "工作节点",
      "overview.workersOnline": "{total} 个中 {online} 个在线",
      "views.delete": "删除视图 {name}",
      "views.name": "视图名称",
      "views.save": "保存为视图",
      "views.title": "视图："
    }
  });
  // The edge answers GET /api/v1/overview; the control plane's comes with
  // its half of the work.
  P.register("overview", () => true, show); // both servers (ADR 0057): the control plane adds workers
})();
