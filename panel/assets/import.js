// ql3 panel: the QingLong import wizard (ql3-edge, ADR 0056; into a
// project of ql3-control, ADR 0063: the same routes under
// /api/v1/projects/{p}/import, the project chosen on the page). Served
// after app.js in the same response and plugged in through
// window.ql3Panel. Three steps: the source (a path on the server or an
// uploaded tar of the data folder) and QingLong's time zone → the plan
// (every row classified, with what it becomes and why; values never
// shown) → apply, bound to the plan's digest.
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const { h, api, render } = P;
  const t = P.t || ((key, english) => english);
  if (P.addMessages) P.addMessages({
    "en": {
      "nav.import": "Import",
      "import.title": "Import from QingLong",
      "import.help": "Move a QingLong 2 installation in: its tasks, env variables, scripts, subscriptions and dependencies. The QingLong data folder (db/database.sqlite, scripts/, config/) is only read, never changed.",
      "import.source": "Source", "import.fromPath": "Folder on the server", "import.fromUpload": "Upload an archive (.tar or .tar.gz of the data folder)",
      "import.path": "Data folder path", "import.file": "Archive", "import.zone": "QingLong's time zone",
      "import.zoneHelp": "The zone QingLong ran in: its schedules are wall-clock times there.",
      "import.inspect": "Inspect", "import.inspecting": "Reading the QingLong data…",
      "import.plan": "Plan", "import.digest": "Plan digest: {digest}", "import.counts": "Summary",
      "import.onlyAttention": "Only rows that need attention", "import.apply": "Apply this plan", "import.applying": "Applying…",
      "import.kind": "Kind", "import.sourceId": "Source", "import.class": "Class", "import.name": "Name", "import.becomes": "Becomes", "import.reasons": "Reasons",
      "import.kind.task": "task", "import.kind.env": "env", "import.kind.draft": "config.sh draft", "import.kind.subscription": "subscription",
      "import.kind.dependency": "dependency", "import.kind.file": "file",
      "import.class.lossless": "lossless", "import.class.requires_shell_compatibility": "needs shell compatibility",
      "import.class.requires_manual_action": "needs manual action", "import.class.malformed": "malformed",
      "import.disabled": "disabled", "import.envEntry": "entry {rank} of {name}, {bytes} bytes", "import.draftEntry": "a disabled draft entry",
      "import.result": "Result", "import.status.applied": "Applied.", "import.status.existing": "This plan was applied before: nothing changed.",
      "import.done": "{tasks} tasks, {envs} env entries, {subs} subscriptions, {deps} dependencies, {files} script files.",
      "import.refused": "Not copied: scripts/{path} ({reasons})", "import.skipped": "Not unpacked (a link or special file): {path}",
      "import.line": "line {line}",
      "import.project": "Project", "import.noProject": "Create a project first: an import goes into one project."
    },
    "zh-CN": {
      "nav.import": "导入",
      "import.title": "从青龙导入",
      "import.help": "迁入一个青龙 2 安装：任务、环境变量、脚本、订阅和依赖。青龙的数据目录（db/database.sqlite、scripts/、config/）只读，绝不修改。",
      "import.source": "来源", "import.fromPath": "服务器上的目录", "import.fromUpload": "上传压缩包（数据目录的 .tar 或 .tar.gz）",
      "import.path": "数据目录路径", "import.file": "压缩包", "import.zone": "青龙所在时区",
      "import.zoneHelp": "青龙运行时的时区：它的定时规则是该时区的本地时间。",
      "import.inspect": "检查", "import.inspecting": "正在读取青龙数据…",
      "import.plan": "计划", "import.digest": "计划摘要：{digest}", "import.counts": "汇总",
      "import.onlyAttention": "只显示需要处理的行", "import.apply": "执行此计划", "import.applying": "正在执行…",
      "import.kind": "类型", "import.sourceId": "来源", "import.class": "分类", "import.name": "名称", "import.becomes": "导入为", "import.reasons": "原因",
      "import.kind.task": "任务", "import.kind.env": "环境变量", "import.kind.draft": "config.sh 草稿", "import.kind.subscription": "订阅",
      "import.kind.dependency": "依赖", "import.kind.file": "文件",
      "import.class.lossless": "无损", "import.class.requires_shell_compatibility": "需要 shell 兼容",
      "import.class.requires_manual_action": "需要手动处理", "import.class.malformed": "格式错误",
      "import.disabled": "已禁用", "import.envEntry": "{name} 的第 {rank} 个值，{bytes} 字节", "import.draftEntry": "一个禁用的草稿变量",
      "import.result": "结果", "import.status.applied": "已导入。", "import.status.existing": "此计划之前已执行过：没有任何改动。",
      "import.done": "{tasks} 个任务，{envs} 个环境变量，{subs} 个订阅，{deps} 个依赖，{files} 个脚本文件。",
      "import.refused": "未复制：scripts/{path}（{reasons}）", "import.skipped": "未解包（链接或特殊文件）：{path}",
      "import.line": "第 {line} 行",
      "import.project": "项目", "import.noProject": "请先创建一个项目：导入的内容会进入一个项目。"
    }
  });

  // base is the import's API: the edge's, or the chosen project's on
  // ql3-control (?project= in the page's address; the first project when
  // none is chosen).
  let base = "/api/v1/import";

  async function upload(file, zone) {
    const n = file.name.toLowerCase();
    const format = (n.endsWith(".tar.gz") || n.endsWith(".tgz")) ? "tar.gz" : "tar";
    const r = await fetch(base + "/upload?" + new URLSearchParams({ zone, format }).toString(), {
      method: "POST", credentials: "same-origin", cache: "no-store", body: file,
      headers: { "Content-Type": "application/octet-stream", Accept: "application/json" },
    });
    const body = await r.json().catch(() => ({ message: "HTTP " + r.status }));
    if (!r.ok) {
      const err = new Error(body.message || "HTTP " + r.status);
      err.status = r.status;
      if (r.status === 401) P.route();
      throw err;
    }
    return body;
  }

  // rowsOf flattens a plan into table rows: [kind, source, class, name, becomes, reasons].
  function rowsOf(plan) {
    const rows = [];
    for (const x of plan.tasks || []) {
      let what = x.script ? "script " + [x.script.file].concat(x.script.args || []).join(" ") : x.shell ? "bash: " + x.shell.split("\n")[0] : "";
      if ((x.schedules || []).length) what += " @ " + x.schedules.join(" | ");
      if ((x.kind) && !x.enabled) what += " (" + t("import.disabled", "disabled") + ")";
      rows.push(["task", x.sourceId, x.class, x.name, what, x.reasons]);
    }
    for (const x of plan.envs || []) {
      rows.push(["env", x.sourceId, x.class, x.name, t("import.envEntry", "entry {rank} of {name}, {bytes} bytes", { rank: x.rank + 1, name: x.name, bytes: x.valueBytes }) +
        (x.enabled ? "" : " (" + t("import.disabled", "disabled") + ")"), x.reasons]);
    }
    for (const x of plan.configDrafts || []) rows.push(["draft", t("import.line", "line {line}", { line: x.line }), x.class, x.name, t("import.draftEntry", "a disabled draft entry"), x.reasons]);
    for (const x of plan.subscriptions || []) rows.push(["subscription", x.sourceId, x.class, x.name, x.kind + " " + x.url + " → scripts/" + (x.folder || ""), x.reasons]);
    for (const x of plan.dependencies || []) rows.push(["dependency", x.sourceId, x.class, x.name, x.kind + (x.version ? " " + x.version : ""), x.reasons]);
    for (const x of plan.files || []) rows.push(["file", "scripts/" + x.path, x.class, "", "", x.reasons]);
    return rows;
  }

  function planView(ins, g, zone, msg, say) {
    const plan = ins.plan;
    const at = base; // the server (and project) that inspected it
    const only = h("input", { type: "checkbox", id: "import-only", checked: true });
    const table = h("table", { class: "cards", id: "import-rows" });
    const head = h("thead", {}, h("tr", {}, ["kind", "sourceId", "class", "name", "becomes", "reasons"].map((k) => h("th", { text: t("import." + k, k) }))));
    const fill = () => {
      const body = h("tbody", {});
      for (const [kind, src, cls, name, what, reasons] of rowsOf(plan)) {
        if (only.checked && cls === "lossless" && !(reasons || []).length) continue;
        body.append(h("tr", { "data-kind": kind, "data-class": cls, "data-source": String(src) },
          h("td", { "data-label": t("import.kind", "Kind"), text: t("import.kind." + kind, kind) }),
          h("td", { "data-label": t("import.sourceId", "Source"), class: "mono", text: String(src) }),
          h("td", { "data-label": t("import.class", "Class"), text: t("import.class." + cls, cls) }),
          h("td", { "data-label": t("import.name", "Name"), text: name || "" }),
          h("td", { "data-label": t("import.becomes", "Becomes"), class: "mono", text: what || "" }),
          h("td", { "data-label": t("import.reasons", "Reasons"), text: (reasons || []).join("; ") })));
      }
      table.replaceChildren(head, body);
    };
    only.addEventListener("change", fill);
    fill();
    const counts = h("ul", { id: "import-counts" });
    for (const [kind, byClass] of Object.entries(plan.counts || {}).sort()) {
      const parts = Object.entries(byClass).map(([c, n]) => n + " " + t("import.class." + c, c));
      if (parts.length) counts.append(h("li", { "data-kind": kind, text: kind + ": " + parts.join(", ") }));
    }
    const result = h("section", { id: "import-result" });
    const apply = h("button", { type: "button", class: "primary", id: "import-apply", text: t("import.apply", "Apply this plan") });
    apply.addEventListener("click", async () => {
      apply.disabled = true;
      say(t("import.applying", "Applying…"));
      try {
        const res = await api("POST", at + "/apply", { plan: ins.planDigest, from: ins.from, zone });
        say("");
        result.replaceChildren(
          h("h2", { text: t("import.result", "Result") }),
          h("p", { id: "import-status", "data-status": res.status, text: t("import.status." + res.status, res.status) }),
          h("p", { id: "import-done", text: t("import.done", "", { tasks: res.tasks, envs: res.envs, subs: res.subscriptions, deps: res.dependencies, files: res.files }) }),
          h("ul", { id: "import-refused" }, (res.refusedFiles || []).map((f) => h("li", { text: t("import.refused", "", { path: f.path, reasons: (f.reasons || []).join("; ") }) }))));
      } catch (e) {
        if (e.status !== 401) say(e.message, "formerr");
      } finally {
        apply.disabled = false;
      }
    });
    return h("section", { id: "import-plan" },
      h("h2", { text: t("import.plan", "Plan") }),
      h("p", { class: "mono", id: "import-digest", text: t("import.digest", "Plan digest: {digest}", { digest: ins.planDigest }) }),
      h("h3", { text: t("import.counts", "Summary") }), counts,
      (plan.notes || []).map((n) => h("p", { class: "notice", text: n })),
      (ins.skipped || []).map((s) => h("p", { class: "muted", text: t("import.skipped", "", { path: s }) })),
      h("label", {}, only, " ", t("import.onlyAttention", "Only rows that need attention")),
      table,
      h("div", { class: "bar" }, apply),
      result);
  }

  async function show(p, params, g) {
    let picker = null;
    base = "/api/v1/import";
    if (P.S.control) {
      const projects = (await api("GET", "/api/v1/projects?limit=200")).items.filter((x) => x.status === "active");
      const project = params.get("project") || (projects[0] ? projects[0].name : "");
      if (!project) { render(g, h("h1", { text: t("import.title", "Import from QingLong") }), h("p", { class: "muted", id: "import-no-project", text: t("import.noProject", "Create a project first: an import goes into one project.") })); return; }
      base = "/api/v1/projects/" + encodeURIComponent(project) + "/import";
      picker = h("select", { id: "import-project", "aria-label": t("import.project", "Project"), onchange: (ev) => { location.hash = "#/import?" + new URLSearchParams({ project: ev.target.value }).toString(); } },
        projects.map((x) => h("option", { value: x.name, text: x.name, selected: x.name === project })));
    }
    const msg = h("p", { class: "notice", id: "import-msg", role: "status" });
    const say = (text, cls) => { msg.textContent = text; msg.className = cls || "notice"; };
    const modePath = h("input", { type: "radio", name: "import-mode", id: "import-mode-path", value: "path", checked: true });
    const modeUpload = h("input", { type: "radio", name: "import-mode", id: "import-mode-upload", value: "upload" });
    const from = h("input", { id: "import-from", class: "mono", size: "48", placeholder: "/ql/data", autocomplete: "off" });
    const file = h("input", { type: "file", id: "import-file", accept: ".tar,.tar.gz,.tgz" });
    const zone = h("input", { id: "import-zone", value: "Asia/Shanghai", autocomplete: "off" });
    const planBox = h("div", { id: "import-plan-box" });
    const inspect = h("button", { type: "button", class: "primary", id: "import-inspect", text: t("import.inspect", "Inspect") });
    inspect.addEventListener("click", async () => {
      inspect.disabled = true;
      planBox.replaceChildren();
      say(t("import.inspecting", "Reading the QingLong data…"));
      try {
        let ins;
        if (modeUpload.checked) {
          if (!file.files[0]) throw new Error(t("import.file", "Archive") + "?");
          ins = await upload(file.files[0], zone.value.trim());
        } else {
          ins = await api("POST", base + "/inspect", { from: from.value.trim(), zone: zone.value.trim() });
        }
        say("");
        planBox.replaceChildren(planView(ins, g, zone.value.trim(), msg, say));
      } catch (e) {
        if (e.status !== 401) say(e.message, "formerr");
      } finally {
        inspect.disabled = false;
      }
    });
    render(g,
      h("h1", { text: t("import.title", "Import from QingLong") }),
      h("p", { class: "muted", text: t("import.help", "") }),
      picker ? h("p", { class: "bar" }, h("label", { for: "import-project", text: t("import.project", "Project") + " " }), picker) : null,
      h("fieldset", {},
        h("legend", { text: t("import.source", "Source") }),
        h("label", {}, modePath, " ", t("import.fromPath", "Folder on the server")),
        h("label", {}, modeUpload, " ", t("import.fromUpload", "Upload an archive")),
        h("div", { class: "bar" },
          h("label", {}, t("import.path", "Data folder path"), h("br"), from),
          h("label", {}, t("import.file", "Archive"), h("br"), file),
          h("label", {}, t("import.zone", "QingLong's time zone"), h("br"), zone),
          inspect),
        h("p", { class: "muted", text: t("import.zoneHelp", "") })),
      msg,
      planBox);
  }

  // Both servers: the edge's own stores, or a project's on ql3-control.
  P.register("import", () => true, show);
})();
