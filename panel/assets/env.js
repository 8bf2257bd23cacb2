// ql3 panel: the env store page (ADR 0038; on ql3-control a project's,
// ADR 0051). Served after app.js in the same response and plugged in
// through window.ql3Panel. Values are write-only here: the list never has
// them, the form never fills them in, and "Reveal" asks the server for one
// value (an audited read).
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const { h, td, api, q, render, field, showFieldError, clearErrors, clearFieldErrorOnEdit } = P;
  const t = P.t || ((key, english) => english);
  const head = (...cols) => h("thead", {}, h("tr", {}, cols.map((x) => h("th", { text: x }))));
  // The edge has one store (/api/v1/envs); ql3-control one per project
  // (/api/v1/projects/{project}/envs), chosen with ?project= (default:
  // the first project) and kept in every link of the page.
  let base = "/api/v1/envs";
  let project = "";
  const path = (id) => base + "/" + encodeURIComponent(id);
  const link = (tail, extra) => "#/envs" + tail + q(Object.assign({ project }, extra || {}));

  async function show(p, params, g) {
    if (P.S.control) {
      project = params.get("project") || "";
      if (!project) {
        const ps = await api("GET", "/api/v1/projects?limit=1");
        project = ps.items && ps.items.length ? ps.items[0].name : "";
      }
      base = "/api/v1/projects/" + encodeURIComponent(project) + "/envs";
    }
    if (p[0] === "new") return envForm(null, g);
    if (p[0] && p[1] === "edit") return envForm(decodeURIComponent(p[0]), g);
    return envList(params, g);
  }

  async function envList(params, g) {
    const search = params.get("q") || "";
    const page = await api("GET", base + q({ q: search, limit: "200", cursor: params.get("cursor") }));
    const items = page.items;
    // act runs a change and redraws; fn returning false changed nothing.
    const act = (fn) => async () => {
      try { if (await fn() === false) return; } catch (e) { if (e.status !== 401) alert(e.message); return; }
      P.route();
    };
    const rows = items.map((e, i) => {
      const revealed = h("code", { class: "revealed mono", hidden: true });
      const reveal = h("button", { type: "button", class: "reveal", text: t("envs.reveal", "Reveal") });
      reveal.addEventListener("click", async () => {
        if (!revealed.hidden) { revealed.hidden = true; revealed.textContent = ""; reveal.textContent = t("envs.reveal", "Reveal"); return; }
        try {
          const v = await api("POST", path(e.id) + "/reveal");
          revealed.textContent = v.value; revealed.hidden = false; reveal.textContent = t("envs.hide", "Hide");
        } catch (err) { if (err.status !== 401) alert(err.message); }
      });
      // Up: before the previous entry; down: before the one after the next
      // (or last). The server keeps pinned entries on top either way.
      const up = i > 0 ? act(() => api("POST", path(e.id) + "/move", { before: items[i - 1].id })) : null;
      const down = i < items.length - 1 ? act(() => api("POST", path(e.id) + "/move", { before: i + 2 < items.length ? items[i + 2].id : "" })) : null;
      return h("tr", { "data-env": e.name, "data-id": e.id },
        td(t("envs.name", "Name"), h("strong", { class: "mono", text: e.name }), e.pinned ? h("span", { class: "mark", text: t("envs.pinned", "pinned") }) : null),
        td(t("envs.value", "Value"), h("span", { class: "muted", text: t("envs.hidden", "hidden") }), " ", revealed),
        td(t("envs.remarks", "Remarks"), e.remarks || ""),
        td(t("envs.labels", "Labels"), (e.labels || []).join(", ")),
        td(t("envs.enabled", "Enabled"), e.enabled ? t("envs.yes", "yes") : t("envs.no", "no")),
        td(t("envs.actions", "Actions"), h("div", { class: "bar" },
          reveal,
          h("a", { class: "button edit", href: link("/" + encodeURIComponent(e.id) + "/edit"), text: t("envs.edit", "Edit") }),
          h("button", { type: "button", class: "toggle", text: e.enabled ? t("envs.disable", "Disable") : t("envs.enable", "Enable"),
            onclick: act(() => api("POST", path(e.id) + (e.enabled ? "/disable" : "/enable"))) }),
          h("button", { type: "button", class: "pin", text: e.pinned ? t("envs.unpin", "Unpin") : t("envs.pin", "Pin"),
            onclick: act(() => api("PATCH", path(e.id), { pinned: !e.pinned })) }),
          h("button", { type: "button", class: "up", text: t("envs.up", "Up"), disabled: !up, onclick: up || undefined }),
          h("button", { type: "button", class: "down", text: t("envs.down", "Down"), disabled: !down, onclick: down || undefined }),
          h("button", { type: "button", class: "danger delete", text: t("envs.delete", "Delete"), onclick: act(async () => {
            if (!confirm(t("envs.confirmDelete", "Delete {name}?").replace("{name}", e.name))) return false;
            await api("DELETE", path(e.id));
          }) }))));
    });
    const box = h("input", { type: "search", id: "env-search", name: "q", value: search, placeholder: t("envs.searchHint", "name or remarks"), "aria-label": t("envs.search", "Search") });
    const projectBox = P.S.control ? h("input", { type: "text", id: "env-project", name: "project", value: project, autocomplete: "off", "aria-label": t("envs.project", "Project") }) : null;
    const form = h("form", { class: "bar", id: "env-filter", onsubmit: (ev) => {
      ev.preventDefault();
      if (projectBox) project = projectBox.value;
      location.hash = link("", { q: box.value });
    } }, projectBox, box, h("button", { type: "submit", text: t("envs.search", "Search") }));
    render(g,
      h("div", { class: "bar" }, h("h1", { text: t("envs.title", "Environment") }), h("a", { class: "button", href: link("/new"), id: "new-env", text: t("envs.new", "New variable") })),
      h("p", { class: "muted", text: t("envs.intro", "Every enabled variable reaches every task (a task may narrow it with env.use); several with one name are joined with & in this order. Values are stored encrypted and masked as *** in logs.") }),
      form,
      rows.length ? h("table", { class: "cards", id: "envs" },
        head(t("envs.name", "Name"), t("envs.value", "Value"), t("envs.remarks", "Remarks"), t("envs.labels", "Labels"), t("envs.enabled", "Enabled"), t("envs.actions", "Actions")),
        h("tbody", {}, rows)) : h("p", { id: "no-envs", text: search ? t("envs.noMatch", "No variable matches.") : t("envs.none", "No variables yet.") }),
      h("p", { class: "muted", id: "env-total", text: t("envs.total", "{n} variable(s)").replace("{n}", page.total) }),
      page.nextCursor ? h("a", { class: "button", id: "more-envs", href: link("", { q: search, cursor: page.nextCursor }), text: t("envs.more", "More") }) : null);
  }

  async function envForm(id, g) {
    const e = id ? await api("GET", path(id)) : null;
    const I = (attrs) => h("input", Object.assign({ type: "text", autocomplete: "off", spellcheck: "false" }, attrs));
    const name = I({ value: e ? e.name : "", required: true });
    // The value is write-only: never filled in, and on edit left out of
    // the request unless something was typed.
    const value = h("textarea", { rows: 4, spellcheck: "false", autocomplete: "off", placeholder: e ? t("envs.valueUnchanged", "unchanged: type a new value to replace it") : "" });
    const remarks = I({ value: e ? e.remarks || "" : "" });
    const labels = I({ value: e ? (e.labels || []).join(", ") : "" });
    const enabled = h("input", { type: "checkbox", id: "f-enabled", checked: !e || e.enabled });
    const pinned = h("input", { type: "checkbox", id: "f-pinned", checked: !!(e && e.pinned) });
    const form = h("form", { id: "env-form", novalidate: true },
      h("h1", { text: e ? t("envs.editTitle", "Edit {name}").replace("{name}", e.name) : t("envs.new", "New variable") }),
      h("div", { class: "formerr", role: "alert" }),
      field(t("envs.name", "Name"), "name", name, t("envs.nameHint", "letters, digits and _, not starting with a digit; QL3_ is reserved")),
      field(t("envs.value", "Value"), "value", value, t("envs.valueHint", "write-only: it is never shown here again (Reveal on the list asks for it)")),
      field(t("envs.remarks", "Remarks"), "remarks", remarks),
      field(t("envs.labelsHint", "Labels, comma-separated"), "labels", labels),
      h("label", {}, enabled, " " + t("envs.enabledBox", "enabled")), " ", h("label", {}, pinned, " " + t("envs.pinned", "pinned")),
      h("div", { class: "bar" }, h("button", { type: "submit", class: "primary", id: "env-save", text: e ? t("envs.save", "Save") : t("envs.create", "Create") }),
        h("a", { href: link(""), class: "button", text: t("envs.cancel", "Cancel") })));
    clearFieldErrorOnEdit(form);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(form);
      const ls = labels.value.split(",").map((x) => x.trim()).filter(Boolean);
      const body = { name: name.value, remarks: remarks.value, labels: ls, enabled: enabled.checked, pinned: pinned.checked };
      try {
        if (e) {
          if (value.value !== "") body.value = value.value;
          await api("PATCH", path(e.id), body);
        } else {
          body.value = value.value;
          await api("POST", base, body);
        }
        value.value = "";
        location.hash = link("");
      } catch (err) {
        if (err.status === 401) return;
        showFieldError(form, err);
      }
    });
    render(g, form);
    name.focus();
  }

  // The page's strings in English and Chinese (ADR 0050).
  if (P.addMessages) P.addMessages({
    "en": {
      "envs.actions": "Actions",
      "envs.cancel": "Cancel",
      "envs.confirmDelete": "Delete {name}?",
      "envs.create": "Create",
      "envs.delete": "Delete",
      "envs.disable": "Disable",
      "envs.down": "Down",
      "envs.edit": "Edit",
      "envs.editTitle": "Edit {name}",
      "envs.enable": "Enable",
      "envs.enabled": "Enabled",
      "envs.enabledBox": "enabled",
      "envs.hidden": "hidden",
      "envs.hide": "Hide",
      "envs.intro": "Every enabled variable reaches every task (a task may narrow it with env.use); several with one name are joined with & in this order. Values are stored encrypted and masked as *** in logs.",
      "envs.labels": "Labels",
      "envs.labelsHint": "Labels, comma-separated",
      "envs.more": "More",
      "envs.name": "Name",
      "envs.nameHint": "letters, digits and _, not starting with a digit; QL3_ is reserved",
      "envs.new": "New variable",
      "envs.no": "no",
      "envs.noMatch": "No variable matches.",
      "envs.none": "No variables yet.",
      "envs.pin": "Pin",
      "envs.pinned": "pinned",
      "envs.project": "Project",
      "envs.remarks": "Remarks",
      "envs.reveal": "Reveal",
      "envs.save": "Save",
      "envs.search": "Search",
      "envs.searchHint": "name or remarks",
      "envs.title": "Environment",
      "envs.total": "{n} variable(s)",
      "envs.unpin": "Unpin",
      "envs.up": "Up",
      "envs.value": "Value",
      "envs.valueHint": "write-only: it is never shown here again (Reveal on the list asks for it)",
      "envs.valueUnchanged": "unchanged: type a new value to replace it",
      "envs.yes": "yes"
    },
    "zh-CN": {
      "envs.actions": "操作",
      "envs.cancel": "取消",
      "envs.confirmDelete": "删除 {name}？",
      "envs.create": "创建",
      "envs.delete": "删除",
      "envs.disable": "禁用",
      "envs.down": "下移",
      "envs.edit": "编辑",
      "envs.editTitle": "编辑 {name}",
      "envs.enable": "启用",
      "envs.enabled": "启用",
      "envs.enabledBox": "启用",
      "envs.hidden": "已隐藏",
      "envs.hide": "隐藏",
      "envs.intro": "每个启用的变量都会传给所有任务（任务可以用 env.use 缩小范围）；同名的多个变量按此顺序用 & 连接。值加密存储，日志中显示为 ***。",
      "envs.labels": "标签",
      "envs.labelsHint": "标签，用逗号分隔",
      "envs.more": "更多",
      "envs.name": "名称",
      "envs.nameHint": "字母、数字和 _，不能以数字开头；QL3_ 为保留前缀",
      "envs.new": "新建变量",
      "envs.no": "否",
      "envs.noMatch": "没有匹配的变量。",
      "envs.none": "还没有变量。",
      "envs.pin": "置顶",
      "envs.pinned": "置顶",
      "envs.project": "项目",
      "envs.remarks": "备注",
      "envs.reveal": "显示",
      "envs.save": "保存",
      "envs.search": "搜索",
      "envs.searchHint": "名称或备注",
      "envs.title": "环境变量",
      "envs.total": "共 {n} 个变量",
      "envs.unpin": "取消置顶",
      "envs.up": "上移",
      "envs.value": "值",
      "envs.valueHint": "只写：此处不会再显示（在列表中点“显示”查看）",
      "envs.valueUnchanged": "保持不变：输入新值以替换",
      "envs.yes": "是"
    }
  });

  // Both servers have the page: the edge's one store, the control plane's
  // per project.
  P.register("envs", () => true, show);
})();
