// ql3 panel: the subscriptions and dependencies pages (ql3-edge; ADR 0054,
// ADR 0055). Served after app.js in the same response and plugged in
// through window.ql3Panel. A pull and every dependency action is a Run:
// the pages start them and link to the Run for its log and cancel.
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const t = P.t || ((key, english) => english);
  if (P.addMessages) P.addMessages({
    "en": {
      "subs.title": "Subscriptions",
      "subs.intro": "A subscription pulls a repository into scripts/<folder>/ on its schedule and turns the cron comments of its scripts into tasks. Every pull is a Run.",
      "subs.new": "New subscription",
      "subs.none": "No subscriptions yet.",
      "subs.name": "Name",
      "subs.folder": "Folder",
      "subs.kind": "Kind",
      "subs.url": "URL",
      "subs.branch": "Branch",
      "subs.credential": "Credential (env store entry name)",
      "subs.credentialKind": "Credential kind",
      "subs.noCredential": "none",
      "subs.extensions": "Extensions (comma-separated, e.g. .js,.py)",
      "subs.include": "Include globs (comma-separated)",
      "subs.exclude": "Exclude globs (comma-separated)",
      "subs.schedule": "Pull schedule (cron; empty: by hand)",
      "subs.timeZone": "Time zone",
      "subs.autoAdd": "Create tasks for new scripts",
      "subs.autoRemove": "Act on tasks of removed scripts",
      "subs.removeMode": "A removed script's task",
      "subs.disable": "disable",
      "subs.delete": "delete",
      "subs.lastPull": "Last pull",
      "subs.commit": "Commit",
      "subs.pull": "Pull now",
      "subs.preview": "Preview",
      "subs.remove": "Delete",
      "subs.create": "Create",
      "subs.cancel": "Cancel",
      "subs.started": "Pull started: run {id}",
      "subs.openRun": "open the run",
      "subs.plan": "Plan",
      "subs.action": "Action",
      "subs.script": "Script",
      "subs.cron": "Cron",
      "subs.reason": "Reason",
      "subs.skipped": "Skipped files",
      "subs.noChanges": "Nothing to change.",
      "deps.title": "Dependencies",
      "deps.intro": "Packages the scripts need: node into the scripts folder's node_modules, python into a virtual environment on every process's PATH, linux through the host's package manager. Every action is a Run.",
      "deps.add": "Add and install",
      "deps.none": "No dependencies yet.",
      "deps.kind": "Kind",
      "deps.name": "Package",
      "deps.version": "Version (optional)",
      "deps.state": "State",
      "deps.lastRun": "Last run",
      "deps.install": "Install",
      "deps.reinstall": "Reinstall",
      "deps.remove": "Uninstall",
      "deps.cancel": "Cancel",
      "deps.forget": "Forget",
      "deps.settings": "Registry and proxy",
      "deps.registry": "Registry mirror (npm registry, pip index, or file:///dir of wheels)",
      "deps.proxy": "Proxy",
      "deps.save": "Save",
      "deps.saved": "Saved.",
      "deps.state.new": "new",
      "deps.state.installing": "installing",
      "deps.state.installed": "installed",
      "deps.state.failed": "failed",
      "deps.state.removing": "removing",
      "deps.state.removed": "removed",
      "deps.state.cancelled": "cancelled",
      "deps.introControl": "Packages the scripts of a project need, installed on every online worker the dependency's placement labels select (none: every worker): one Run per worker, into a per-project folder on that worker that the project's script Runs there see.",
      "deps.project": "Project",
      "deps.labels": "Worker labels (k=v,k=v; empty: every worker)",
      "deps.workers": "Workers",
      "deps.noWorkers": "no worker yet",
      "deps.noProject": "Create a project first: each project has its own dependencies."
    },
    "zh-CN": {
      "subs.title": "订阅",
      "subs.intro": "订阅按计划把仓库拉取到 scripts/<目录>/，并根据脚本中的 cron 注释创建任务。每次拉取都是一次运行。",
      "subs.new": "新建订阅",
      "subs.none": "还没有订阅。",
      "subs.name": "名称",
      "subs.folder": "目录",
      "subs.kind": "类型",
      "subs.url": "地址",
      "subs.branch": "分支",
      "subs.credential": "凭据（环境变量名称）",
      "subs.credentialKind": "凭据类型",
      "subs.noCredential": "无",
      "subs.extensions": "文件后缀（逗号分隔，如 .js,.py）",
      "subs.include": "白名单（逗号分隔的通配符）",
      "subs.exclude": "黑名单（逗号分隔的通配符）",
      "subs.schedule": "拉取计划（cron；留空为手动）",
      "subs.timeZone": "时区",
      "subs.autoAdd": "为新脚本创建任务",
      "subs.autoRemove": "处理已删除脚本的任务",
      "subs.removeMode": "脚本删除后其任务",
      "subs.disable": "停用",
      "subs.delete": "删除",
      "subs.lastPull": "上次拉取",
      "subs.commit": "提交",
      "subs.pull": "立即拉取",
      "subs.preview": "预览",
      "subs.remove": "删除",
      "subs.create": "创建",
      "subs.cancel": "取消",
      "subs.started": "已开始拉取：运行 {id}",
      "subs.openRun": "查看运行",
      "subs.plan": "计划",
      "subs.action": "操作",
      "subs.script": "脚本",
      "subs.cron": "定时",
      "subs.reason": "原因",
      "subs.skipped": "跳过的文件",
      "subs.noChanges": "没有需要变更的内容。",
      "deps.title": "依赖",
      "deps.intro": "脚本需要的软件包：node 装到脚本目录的 node_modules，python 装到所有进程 PATH 上的虚拟环境，linux 通过系统包管理器安装。每个操作都是一次运行。",
      "deps.add": "添加并安装",
      "deps.none": "还没有依赖。",
      "deps.kind": "类型",
      "deps.name": "包名",
      "deps.version": "版本（可选）",
      "deps.state": "状态",
      "deps.lastRun": "最近运行",
      "deps.install": "安装",
      "deps.reinstall": "重新安装",
      "deps.remove": "卸载",
      "deps.cancel": "取消",
      "deps.forget": "移除记录",
      "deps.settings": "镜像源与代理",
      "deps.registry": "镜像源（npm 源、pip 索引，或 file:///wheel 目录）",
      "deps.proxy": "代理",
      "deps.save": "保存",
      "deps.saved": "已保存。",
      "deps.state.new": "未安装",
      "deps.state.installing": "安装中",
      "deps.state.installed": "已安装",
      "deps.state.failed": "失败",
      "deps.state.removing": "卸载中",
      "deps.state.removed": "已卸载",
      "deps.state.cancelled": "已取消",
      "deps.introControl": "项目脚本需要的软件包，安装到依赖的放置标签选中的每个在线 worker 上（不填：所有 worker）：每个 worker 一次运行，装到该 worker 上本项目专用的目录，本项目在该 worker 上的脚本运行都能用到。",
      "deps.project": "项目",
      "deps.labels": "Worker 标签（k=v,k=v；不填：所有 worker）",
      "deps.workers": "Worker",
      "deps.noWorkers": "还没有 worker",
      "deps.noProject": "请先创建项目：每个项目有自己的依赖。"
    }
  });
  const { h, td, head, when, api, render, field, showFieldError, clearErrors, clearFieldErrorOnEdit } = P;
  const act = (fn) => async () => {
    try { if (await fn() === false) return; } catch (e) { if (e.status !== 401) alert(e.message); return; }
    P.route();
  };
  const list = (s) => s.split(",").map((x) => x.trim()).filter(Boolean);
  function input(attrs) { return h("input", Object.assign({ type: "text", autocomplete: "off", spellcheck: "false" }, attrs)); }

  // ---- subscriptions ----------------------------------------------------------
  async function subs(p, params, g) {
    if (p[0] === "new") return subForm(g);
    const all = await api("GET", "/api/v1/subscriptions");
    const result = h("div", { id: "sub-result", role: "status" });
    const rows = all.subscriptions.map((s) => h("tr", { "data-sub": s.name, "data-id": s.id },
      td(t("subs.name", "Name"), h("strong", { text: s.name })),
      td(t("subs.folder", "Folder"), h("span", { class: "mono", text: "scripts/" + s.slug + "/" })),
      td(t("subs.url", "URL"), h("span", { class: "mono", text: s.url + (s.branch ? " @" + s.branch : "") })),
      td(t("subs.schedule", "Schedule"), s.schedule || "—"),
      td(t("subs.lastPull", "Last pull"), when(s.lastPullAtMs)),
      td(t("subs.commit", "Commit"), h("span", { class: "mono", text: (s.lastCommit || "—").slice(0, 12) })),
      td("", h("div", { class: "bar" },
        h("button", { type: "button", class: "primary pull", text: t("subs.pull", "Pull now"), onclick: async () => {
          try {
            const r = await api("POST", "/api/v1/subscriptions/" + encodeURIComponent(s.id) + "/pull");
            result.replaceChildren(h("p", { text: t("subs.started", "Pull started: run {id}", { id: r.id }) + " " }),
              h("a", { href: "#/runs/" + encodeURIComponent(r.id), id: "pull-run", text: t("subs.openRun", "open the run") }));
          } catch (e) { if (e.status !== 401) result.replaceChildren(h("p", { class: "formerr", text: e.message })); }
        } }),
        h("button", { type: "button", class: "preview", text: t("subs.preview", "Preview"), onclick: async () => {
          result.replaceChildren(h("p", { text: "…" }));
          try {
            result.replaceChildren(...plan(await api("POST", "/api/v1/subscriptions/" + encodeURIComponent(s.id) + "/preview")));
          } catch (e) { if (e.status !== 401) result.replaceChildren(h("p", { class: "formerr", text: e.message })); }
        } }),
        h("button", { type: "button", class: "danger delete", text: t("subs.remove", "Delete"), onclick: act(async () => {
          if (!confirm(t("subs.remove", "Delete") + " " + s.name + "?")) return false;
          await api("DELETE", "/api/v1/subscriptions/" + encodeURIComponent(s.id));
        }) })))));
    render(g, h("h1", { text: t("subs.title", "Subscriptions") }),
      h("p", { class: "muted", text: t("subs.intro", "") }),
      h("div", { class: "bar" }, h("a", { class: "button", href: "#/subs/new", id: "new-sub", text: t("subs.new", "New subscription") })),
      rows.length ? h("table", { class: "cards", id: "subs" }, head(t("subs.name", "Name"), t("subs.folder", "Folder"), t("subs.url", "URL"),
        t("subs.schedule", "Schedule"), t("subs.lastPull", "Last pull"), t("subs.commit", "Commit"), ""), h("tbody", {}, rows))
        : h("p", { id: "no-subs", text: t("subs.none", "No subscriptions yet.") }),
      result);
  }

  function plan(pv) {
    const out = [h("h2", { text: t("subs.plan", "Plan") + " " + (pv.commit || "").slice(0, 12) })];
    const rows = pv.changes.map((c) => h("tr", { "data-action": c.action, "data-path": c.path },
      td(t("subs.action", "Action"), h("span", { class: "status", text: c.action })),
      td(t("subs.script", "Script"), h("span", { class: "mono", text: c.path })),
      td(t("subs.name", "Name"), c.name || ""),
      td(t("subs.cron", "Cron"), h("span", { class: "mono", text: c.cron || "" })),
      td(t("subs.reason", "Reason"), c.reason || "")));
    out.push(rows.length ? h("table", { class: "cards", id: "preview" }, head(t("subs.action", "Action"), t("subs.script", "Script"),
      t("subs.name", "Name"), t("subs.cron", "Cron"), t("subs.reason", "Reason")), h("tbody", {}, rows))
      : h("p", { id: "no-changes", text: t("subs.noChanges", "Nothing to change.") }));
    if (pv.skipped.length) {
      out.push(h("h2", { text: t("subs.skipped", "Skipped files") }),
        h("ul", { id: "skipped" }, pv.skipped.map((k) => h("li", { text: k.path + ": " + k.reason }))));
    }
    return out;
  }

  function subForm(g) {
    const kind = h("select", { id: "f-kind" }, ["git", "file"].map((k) => h("option", { value: k, text: k })));
    const ckind = h("select", { id: "f-credentialKind" }, h("option", { value: "", text: t("subs.noCredential", "none") }),
      ["token", "ssh_key"].map((k) => h("option", { value: k, text: k })));
    const mode = h("select", { id: "f-removeMode" }, h("option", { value: "disable", text: t("subs.disable", "disable") }),
      h("option", { value: "delete", text: t("subs.delete", "delete") }));
    const f = { name: input({ required: true }), url: input({ required: true }), branch: input({}), credential: input({}),
      extensions: input({ value: ".js,.py,.sh,.ts" }), include: input({}), exclude: input({}), schedule: input({ placeholder: "0 */6 * * *" }),
      timeZone: input({ value: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" }) };
    const autoAdd = h("input", { type: "checkbox", id: "f-autoAdd", checked: true });
    const autoRemove = h("input", { type: "checkbox", id: "f-autoRemove", checked: true });
    const form = h("form", { id: "sub-form", novalidate: true },
      h("h1", { text: t("subs.new", "New subscription") }),
      h("div", { class: "formerr", role: "alert" }),
      field(t("subs.name", "Name"), "name", f.name),
      field(t("subs.kind", "Kind"), "kind", kind),
      field(t("subs.url", "URL"), "url", f.url),
      field(t("subs.branch", "Branch"), "branch", f.branch),
      field(t("subs.credential", "Credential"), "credential", f.credential),
      field(t("subs.credentialKind", "Credential kind"), "credentialKind", ckind),
      field(t("subs.extensions", "Extensions"), "filter.extensions", f.extensions),
      field(t("subs.include", "Include"), "filter.include", f.include),
      field(t("subs.exclude", "Exclude"), "filter.exclude", f.exclude),
      field(t("subs.schedule", "Schedule"), "schedule", f.schedule),
      field(t("subs.timeZone", "Time zone"), "timeZone", f.timeZone),
      h("div", { class: "field" }, h("label", {}, autoAdd, " " + t("subs.autoAdd", "Create tasks for new scripts"))),
      h("div", { class: "field" }, h("label", {}, autoRemove, " " + t("subs.autoRemove", "Act on tasks of removed scripts"))),
      field(t("subs.removeMode", "A removed script's task"), "removeMode", mode),
      h("div", { class: "bar" }, h("button", { type: "submit", class: "primary", id: "sub-save", text: t("subs.create", "Create") }),
        h("a", { href: "#/subs", class: "button", text: t("subs.cancel", "Cancel") })));
    clearFieldErrorOnEdit(form);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(form);
      const body = { name: f.name.value, kind: kind.value, url: f.url.value.trim(), autoAddTasks: autoAdd.checked,
        autoRemoveTasks: autoRemove.checked, removeMode: mode.value };
      for (const k of ["branch", "credential", "schedule", "timeZone"]) if (f[k].value.trim()) body[k] = f[k].value.trim();
      if (ckind.value) body.credentialKind = ckind.value;
      for (const k of ["extensions", "include", "exclude"]) if (list(f[k].value).length) body[k] = list(f[k].value);
      try {
        await api("POST", "/api/v1/subscriptions", body);
        location.hash = "#/subs";
      } catch (err) {
        if (err.status === 401) return;
        showFieldError(form, err);
      }
    });
    render(g, form);
    f.name.focus();
  }

  // ---- dependencies -----------------------------------------------------------
  // The edge has one set (/api/v1/dependencies); ql3-control one per
  // project (/api/v1/projects/{project}/dependencies, chosen with
  // ?project=), each dependency installed by one Run per worker its
  // placement labels select, with each worker's result (ADR 0062).
  async function deps(p, params, g) {
    let base = "/api/v1/dependencies", picker = null, project = "";
    const control = P.S.control;
    if (control) {
      const projects = (await api("GET", "/api/v1/projects?limit=200")).items.filter((x) => x.status === "active");
      project = params.get("project") || (projects[0] ? projects[0].name : "");
      if (!project) { render(g, h("h1", { text: t("deps.title", "Dependencies") }), h("p", { class: "muted", id: "dep-no-project", text: t("deps.noProject", "Create a project first.") })); return; }
      base = "/api/v1/projects/" + encodeURIComponent(project) + "/dependencies";
      picker = h("select", { id: "dep-project", "aria-label": t("deps.project", "Project"), onchange: (ev) => { location.hash = "#/deps?" + new URLSearchParams({ project: ev.target.value }).toString(); } },
        projects.map((x) => h("option", { value: x.name, text: x.name, selected: x.name === project })));
    }
    const all = await api("GET", base);
    const stateOf = (d) => d.state || d.status;
    const kind = h("select", { id: "dep-kind" }, ["node", "python", "linux"].map((k) => h("option", { value: k, text: k })));
    const name = input({ id: "dep-name" }), version = input({ id: "dep-version" });
    const labels = control ? input({ id: "dep-labels", placeholder: "zone=home" }) : null;
    const add = h("form", { id: "dep-form", novalidate: true, class: "bar" },
      field(t("deps.kind", "Kind"), "kind", kind), field(t("deps.name", "Package"), "name", name),
      field(t("deps.version", "Version"), "version", version),
      labels ? field(t("deps.labels", "Worker labels"), "labels", labels) : null,
      h("div", { class: "formerr", role: "alert" }),
      h("button", { type: "submit", class: "primary", id: "dep-add", text: t("deps.add", "Add and install") }));
    clearFieldErrorOnEdit(add);
    add.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(add);
      const body = { kind: kind.value, name: name.value.trim() };
      if (version.value.trim()) body.version = version.value.trim();
      if (labels && labels.value.trim()) {
        body.labels = {};
        for (const kv of list(labels.value)) { const i = kv.indexOf("="); body.labels[i < 0 ? kv : kv.slice(0, i).trim()] = i < 0 ? "" : kv.slice(i + 1).trim(); }
      }
      try { await api("POST", base, body); P.route(); } catch (err) { if (err.status !== 401) showFieldError(add, err); }
    });
    const path = (d, what) => base + "/" + encodeURIComponent(d.id) + (what ? "/" + what : "");
    const runLink = (id, cls, text) => h("a", { class: cls, href: "#/runs/" + encodeURIComponent(id), text: text || id.slice(-12) });
    // ql3-control: each worker's result, linked to its Run.
    const workers = (d) => (d.installs || []).length
      ? h("ul", { class: "dep-workers" }, d.installs.map((i) => h("li", { "data-worker": i.workerName, "data-state": i.status },
        h("strong", { text: i.workerName }), " ", h("span", { class: "status dep-worker-state", text: t("deps.state." + i.status, i.status) }),
        i.runId ? [" ", runLink(i.runId, "dep-run")] : null)))
      : h("span", { class: "muted", text: labelsText(d.labels) + " — " + t("deps.noWorkers", "no worker yet") });
    const rows = all.dependencies.map((d) => h("tr", { "data-dep": d.name, "data-state": stateOf(d) },
      td(t("deps.kind", "Kind"), d.kind),
      td(t("deps.name", "Package"), h("strong", { text: d.name })),
      td(t("deps.version", "Version"), d.version || "—"),
      td(t("deps.state", "State"), h("span", { class: "status dep-state", text: t("deps.state." + stateOf(d), stateOf(d)) })),
      control ? td(t("deps.workers", "Workers"), workers(d))
        : td(t("deps.lastRun", "Last run"), d.lastRunId ? runLink(d.lastRunId, "dep-run") : "—"),
      td("", h("div", { class: "bar" },
        ["installing", "removing"].includes(stateOf(d))
          ? h("button", { type: "button", class: "danger dep-cancel", text: t("deps.cancel", "Cancel"), onclick: act(() => api("POST", path(d, "cancel"))) })
          : [h("button", { type: "button", class: "dep-install", text: t("deps.install", "Install"), onclick: act(() => api("POST", path(d, "install"))) }),
            h("button", { type: "button", class: "dep-reinstall", text: t("deps.reinstall", "Reinstall"), onclick: act(() => api("POST", path(d, "reinstall"))) }),
            h("button", { type: "button", class: "dep-remove", text: t("deps.remove", "Uninstall"), onclick: act(() => api("POST", path(d, "remove"))) }),
            h("button", { type: "button", class: "danger dep-forget", text: t("deps.forget", "Forget"), onclick: act(async () => {
              if (!confirm(t("deps.forget", "Forget") + " " + d.name + "?")) return false;
              await api("DELETE", path(d));
            }) })]))));
    const skind = h("select", { id: "set-kind" }, ["node", "python", "linux"].map((k) => h("option", { value: k, text: k })));
    const reg = input({ id: "set-registry" }), proxy = input({ id: "set-proxy" });
    const saved = h("span", { class: "muted", id: "set-saved", role: "status" });
    const load = async () => {
      const s = await api("GET", base + "/settings/" + skind.value);
      reg.value = s.registry; proxy.value = s.proxy; saved.textContent = "";
    };
    skind.addEventListener("change", () => load().catch(() => {}));
    const settings = h("form", { id: "dep-settings", novalidate: true },
      h("h2", { text: t("deps.settings", "Registry and proxy") }),
      h("div", { class: "formerr", role: "alert" }),
      field(t("deps.kind", "Kind"), "kind", skind), field(t("deps.registry", "Registry"), "registry", reg), field(t("deps.proxy", "Proxy"), "proxy", proxy),
      h("div", { class: "bar" }, h("button", { type: "submit", id: "set-save", text: t("deps.save", "Save") }), saved));
    clearFieldErrorOnEdit(settings);
    settings.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(settings);
      try {
        await api("PUT", base + "/settings/" + skind.value, { kind: skind.value, registry: reg.value.trim(), proxy: proxy.value.trim() });
        saved.textContent = t("deps.saved", "Saved.");
      } catch (err) { if (err.status !== 401) showFieldError(settings, err); }
    });
    render(g, h("h1", { text: t("deps.title", "Dependencies") }),
      h("p", { class: "muted", text: control ? t("deps.introControl", "") : t("deps.intro", "") }), picker, add,
      rows.length ? h("table", { class: "cards", id: "deps" }, head(t("deps.kind", "Kind"), t("deps.name", "Package"), t("deps.version", "Version"),
        t("deps.state", "State"), control ? t("deps.workers", "Workers") : t("deps.lastRun", "Last run"), ""), h("tbody", {}, rows))
        : h("p", { id: "no-deps", text: t("deps.none", "No dependencies yet.") }),
      settings);
    await load();
    // A running action ends on its own: refresh while one is in progress.
    if (all.dependencies.some((d) => ["installing", "removing"].includes(stateOf(d)))) {
      P.S.timers.push(setInterval(() => { if (!document.activeElement || document.activeElement.tagName !== "INPUT") P.route(); }, 2000));
    }
  }
  function labelsText(l) {
    const keys = Object.keys(l || {}).sort();
    return keys.length ? keys.map((k) => k + "=" + l[k]).join(",") : "*";
  }

  // Subscriptions are the edge's for now; dependencies both servers'.
  P.register("subs", (S) => !S.control, subs);
  P.register("deps", () => true, deps);
})();
