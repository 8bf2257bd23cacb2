// ql3 panel: the notifications page (ql3-edge, ADR 0046; ql3-control per
// project, ADR 0053). Served after
// app.js in the same response and plugged in through window.ql3Panel.
// Channel credentials are write-only here: the list shows which ones are
// set, never their values, and the form never fills them in.
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const t = P.t || ((key, english) => english);
  if (P.addMessages) P.addMessages({
    en: {},
    "zh-CN": {
      "notify.title": "通知",
      "notify.project": "项目",
      "notify.channels": "通知渠道",
      "notify.rules": "通知规则",
      "notify.deliveries": "发送记录",
      "notify.newChannel": "新建渠道",
      "notify.newRule": "新建规则",
      "notify.test": "发送测试",
      "notify.delete": "删除",
      "notify.enable": "启用",
      "notify.disable": "停用",
      "notify.name": "名称",
      "notify.kind": "类型",
      "notify.server": "服务器 / Webhook 地址",
      "notify.token": "令牌 / Key（只写）",
      "notify.secret": "签名密钥（只写）",
      "notify.chatId": "Telegram 会话 ID",
      "notify.topic": "主题（ntfy / PushPlus 群组）",
      "notify.proxy": "代理（http:// 或 https://）",
      "notify.smtpHost": "SMTP 服务器",
      "notify.smtpPort": "SMTP 端口",
      "notify.username": "SMTP 用户名",
      "notify.password": "SMTP 密码（只写）",
      "notify.from": "发件人",
      "notify.to": "收件人（逗号分隔）",
      "notify.create": "创建",
      "notify.cancel": "取消",
      "notify.enabled": "已启用",
      "notify.yes": "是",
      "notify.no": "否",
      "notify.noAnswer": "无应答",
      "notify.secretsSet": "已设置的凭据",
      "notify.kinds": "事件类型",
      "notify.ruleChannels": "渠道",
      "notify.scope": "范围",
      "notify.everyTask": "所有任务",
      "notify.taskIds": "任务 ID（逗号分隔，留空为所有任务）",
      "notify.quiet": "免打扰时段（HH:MM-HH:MM，可留空）",
      "notify.quietZone": "免打扰时区",
      "notify.quietMode": "免打扰期间",
      "notify.hold": "暂存，结束后汇总发送",
      "notify.drop": "丢弃",
      "notify.coalesceMax": "每个窗口最多条数（0 不限制）",
      "notify.coalesceWindow": "合并窗口（秒）",
      "notify.status": "状态",
      "notify.attempts": "尝试",
      "notify.lastError": "最后错误",
      "notify.created": "创建时间",
      "notify.noChannels": "还没有渠道。",
      "notify.noRules": "还没有规则：没有规则时不会发送任何通知。",
      "notify.noDeliveries": "还没有发送记录。",
      "notify.testResult": "测试结果",
      "notify.intro": "任务失败、超时、丢失等结果按规则发送到渠道；脚本可用 sendNotify 发送（规则类型选 script）。凭据加密保存，不会再显示。",
      "notify.write-only": "只写：已保存的值不会显示；编辑时留空则保持不变",
    },
  });
  const kindsOfChannel = ["webhook", "telegram", "bark", "serverchan", "pushplus", "dingtalk", "wecom", "feishu", "gotify", "ntfy", "pushdeer", "email"];
  const kindsOfRule = ["failed", "timed_out", "lost", "cancelled", "recovered", "succeeded", "script"];
  const { h, td, when, api, render, field, showFieldError, clearErrors, clearFieldErrorOnEdit } = P;
  const base = "/api/v1/notify";
  // On ql3-control channels, rules and deliveries belong to a project: the
  // page works on one (the first, or the one picked in #notify-project) and
  // every call names it (?project=).
  let project = "";
  async function pickProject() {
    if (!P.S.control || project) return;
    const ps = await api("GET", "/api/v1/projects?limit=100");
    project = ps.items.length ? ps.items[0].name : "";
  }
  const scoped = (path) => !P.S.control ? path : path + (path.includes("?") ? "&" : "?") + "project=" + encodeURIComponent(project);
  const call = (method, path, body) => api(method, scoped(path), body);
  const act = (fn) => async () => {
    try { if (await fn() === false) return; } catch (e) { if (e.status !== 401) alert(e.message); return; }
    P.route();
  };

  async function show(p, params, g) {
    await pickProject();
    if (p[0] === "channel-new") return channelForm(g);
    if (p[0] === "rule-new") return ruleForm(g);
    if (p[0] === "deliveries") return deliveries(params, g);
    return overview(g);
  }

  function nav(current) {
    return h("div", { class: "bar", id: "notify-nav" },
      h("a", { class: current === "overview" ? "button primary" : "button", href: "#/notify", text: t("notify.title", "Notifications") }),
      h("a", { class: current === "deliveries" ? "button primary" : "button", href: "#/notify/deliveries", id: "nav-deliveries", text: t("notify.deliveries", "Delivery log") }),
      P.S.control ? h("span", { class: "muted", id: "notify-project", text: t("notify.project", "Project") + ": " + project }) : null);
  }

  async function overview(g) {
    const [channels, rules] = await Promise.all([call("GET", base + "/channels"), call("GET", base + "/rules")]);
    const names = {};
    channels.items.forEach((c) => { names[c.id] = c.name; });
    const result = h("p", { id: "test-result", class: "muted", role: "status" });
    const chRows = channels.items.map((c) => h("tr", { "data-channel": c.name, "data-id": c.id },
      td(t("notify.name", "Name"), h("strong", { text: c.name })),
      td(t("notify.kind", "Kind"), c.kind),
      td(t("notify.server", "Server"), c.settings.server || ""),
      td(t("notify.secretsSet", "Credentials set"), (c.settings.secretsSet || []).join(", ")),
      td(t("notify.enabled", "Enabled"), c.enabled ? t("notify.yes", "yes") : t("notify.no", "no")),
      td("", h("div", { class: "bar" },
        h("button", { type: "button", class: "send-test", text: t("notify.test", "Send test"), onclick: async () => {
          result.textContent = "…";
          try {
            const d = await call("POST", base + "/channels/" + encodeURIComponent(c.id) + "/test");
            const a = d.log[d.log.length - 1] || {};
            result.textContent = t("notify.testResult", "Test result") + ": " + c.name + " — " + d.status +
              (a.statusCode ? " (HTTP " + a.statusCode + ", " + a.latencyMs + " ms)" : "") + (d.lastError ? " — " + d.lastError : "");
          } catch (e) { if (e.status !== 401) result.textContent = e.message; }
        } }),
        h("button", { type: "button", class: "toggle", text: c.enabled ? t("notify.disable", "Disable") : t("notify.enable", "Enable"),
          onclick: act(() => call("PATCH", base + "/channels/" + encodeURIComponent(c.id), { enabled: !c.enabled })) }),
        h("button", { type: "button", class: "danger delete", text: t("notify.delete", "Delete"), onclick: act(async () => {
          if (!confirm(t("notify.delete", "Delete") + " " + c.name + "?")) return false;
          await call("DELETE", base + "/channels/" + encodeURIComponent(c.id));
        }) })))));
    const ruleRows = rules.items.map((r) => h("tr", { "data-rule": r.name },
      td(t("notify.name", "Name"), h("strong", { text: r.name })),
      td(t("notify.kinds", "Kinds"), r.kinds.join(", ")),
      td(t("notify.ruleChannels", "Channels"), r.channels.map((id) => names[id] || id).join(", ")),
      td(t("notify.scope", "Scope"), (r.taskIds || []).concat(r.labels || []).join(", ") || t("notify.everyTask", "every task")),
      td(t("notify.quiet", "Quiet hours"), r.quiet ? r.quiet.start + "–" + r.quiet.end + " " + r.quiet.zone + " (" + r.quiet.mode + ")" : ""),
      td(t("notify.enabled", "Enabled"), r.enabled ? t("notify.yes", "yes") : t("notify.no", "no")),
      td("", h("button", { type: "button", class: "danger delete", text: t("notify.delete", "Delete"), onclick: act(async () => {
        if (!confirm(t("notify.delete", "Delete") + " " + r.name + "?")) return false;
        await call("DELETE", base + "/rules/" + encodeURIComponent(r.id));
      }) }))));
    const head = (cols) => h("thead", {}, h("tr", {}, cols.map((x) => h("th", { text: x }))));
    render(g, h("h1", { text: t("notify.title", "Notifications") }), nav("overview"),
      h("p", { class: "muted", text: t("notify.intro", "Run outcomes go to channels by the rules; scripts send their own messages with sendNotify (rule kind script). Credentials are stored encrypted and never shown again.") }),
      h("div", { class: "bar" }, h("h2", { text: t("notify.channels", "Channels") }),
        h("a", { class: "button", href: "#/notify/channel-new", id: "new-channel", text: t("notify.newChannel", "New channel") })),
      result,
      chRows.length ? h("table", { class: "cards", id: "channels" }, head([t("notify.name", "Name"), t("notify.kind", "Kind"), t("notify.server", "Server"),
        t("notify.secretsSet", "Credentials set"), t("notify.enabled", "Enabled"), ""]), h("tbody", {}, chRows))
        : h("p", { id: "no-channels", text: t("notify.noChannels", "No channels yet.") }),
      h("div", { class: "bar" }, h("h2", { text: t("notify.rules", "Rules") }),
        h("a", { class: "button", href: "#/notify/rule-new", id: "new-rule", text: t("notify.newRule", "New rule") })),
      ruleRows.length ? h("table", { class: "cards", id: "rules" }, head([t("notify.name", "Name"), t("notify.kinds", "Kinds"), t("notify.ruleChannels", "Channels"),
        t("notify.scope", "Scope"), t("notify.quiet", "Quiet hours"), t("notify.enabled", "Enabled"), ""]), h("tbody", {}, ruleRows))
        : h("p", { id: "no-rules", text: t("notify.noRules", "No rules yet: nothing is sent without one.") }));
  }

  function input(attrs) { return h("input", Object.assign({ type: "text", autocomplete: "off", spellcheck: "false" }, attrs)); }

  function channelForm(g) {
    const kind = h("select", { id: "f-kind" }, kindsOfChannel.map((k) => h("option", { value: k, text: k })));
    const f = {
      name: input({ required: true }), server: input({}), token: input({ type: "password", autocomplete: "new-password" }),
      secret: input({ type: "password", autocomplete: "new-password" }), chatId: input({}), topic: input({}), proxy: input({}),
      smtpHost: input({}), smtpPort: input({ type: "number", min: 1, max: 65535 }), username: input({}),
      password: input({ type: "password", autocomplete: "new-password" }), from: input({}), to: input({}),
    };
    const wo = t("notify.write-only", "write-only: never shown again");
    const form = h("form", { id: "channel-form", novalidate: true },
      h("h1", { text: t("notify.newChannel", "New channel") }),
      h("div", { class: "formerr", role: "alert" }),
      field(t("notify.name", "Name"), "name", f.name),
      field(t("notify.kind", "Kind"), "settings.kind", kind),
      field(t("notify.server", "Server or webhook URL"), "settings.server", f.server),
      field(t("notify.token", "Token / key"), "settings.token", f.token, wo),
      field(t("notify.secret", "Signing secret"), "settings.secret", f.secret, wo),
      field(t("notify.chatId", "Telegram chat id"), "settings.chatId", f.chatId),
      field(t("notify.topic", "Topic"), "settings.topic", f.topic),
      field(t("notify.proxy", "Proxy"), "settings.proxy", f.proxy),
      field(t("notify.smtpHost", "SMTP host"), "settings.smtpHost", f.smtpHost),
      field(t("notify.smtpPort", "SMTP port"), "settings.smtpPort", f.smtpPort),
      field(t("notify.username", "SMTP user"), "settings.username", f.username),
      field(t("notify.password", "SMTP password"), "settings.password", f.password, wo),
      field(t("notify.from", "From"), "settings.from", f.from),
      field(t("notify.to", "To (comma-separated)"), "settings.to", f.to),
      h("div", { class: "bar" }, h("button", { type: "submit", class: "primary", id: "channel-save", text: t("notify.create", "Create") }),
        h("a", { href: "#/notify", class: "button", text: t("notify.cancel", "Cancel") })));
    clearFieldErrorOnEdit(form);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(form);
      const s = { kind: kind.value };
      for (const k of ["server", "token", "secret", "chatId", "topic", "proxy", "smtpHost", "username", "password", "from"]) {
        if (f[k].value !== "") s[k] = f[k].value;
      }
      if (f.smtpPort.value !== "") s.smtpPort = Number(f.smtpPort.value);
      const to = f.to.value.split(",").map((x) => x.trim()).filter(Boolean);
      if (to.length) s.to = to;
      try {
        await call("POST", base + "/channels", { name: f.name.value, settings: s });
        for (const k of ["token", "secret", "password"]) f[k].value = "";
        location.hash = "#/notify";
      } catch (err) {
        if (err.status === 401) return;
        showFieldError(form, err);
      }
    });
    render(g, nav("overview"), form);
    f.name.focus();
  }

  async function ruleForm(g) {
    const channels = await call("GET", base + "/channels");
    const name = input({ required: true });
    const kindBoxes = kindsOfRule.map((k) => h("label", {}, h("input", { type: "checkbox", value: k, class: "rule-kind", checked: ["failed", "timed_out", "lost"].includes(k) }), " " + k));
    const chBoxes = channels.items.map((c) => h("label", {}, h("input", { type: "checkbox", value: c.id, class: "rule-channel" }), " " + c.name));
    const tasks = input({});
    const quiet = input({ placeholder: "22:00-07:00" });
    const zone = input({ value: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" });
    const mode = h("select", { id: "f-quiet-mode" }, h("option", { value: "hold", text: t("notify.hold", "hold, then one digest") }),
      h("option", { value: "drop", text: t("notify.drop", "drop") }));
    const cmax = input({ type: "number", min: 0, max: 1000, value: "0" });
    const cwin = input({ type: "number", min: 0, value: "0" });
    const form = h("form", { id: "rule-form", novalidate: true },
      h("h1", { text: t("notify.newRule", "New rule") }),
      h("div", { class: "formerr", role: "alert" }),
      field(t("notify.name", "Name"), "name", name),
      h("div", { class: "field" }, h("label", { text: t("notify.kinds", "Kinds") }), h("div", { class: "bar" }, kindBoxes), h("div", { class: "ferr", "data-err": "kinds" })),
      h("div", { class: "field" }, h("label", { text: t("notify.ruleChannels", "Channels") }), h("div", { class: "bar" }, chBoxes), h("div", { class: "ferr", "data-err": "channels" })),
      field(t("notify.taskIds", "Task ids (comma-separated; empty: every task)"), "taskIds", tasks),
      field(t("notify.quiet", "Quiet hours HH:MM-HH:MM"), "quiet", quiet),
      field(t("notify.quietZone", "Quiet hours time zone"), "quiet.zone", zone),
      field(t("notify.quietMode", "During quiet hours"), "quiet.mode", mode),
      field(t("notify.coalesceMax", "At most per window (0: no cap)"), "coalesce.max", cmax),
      field(t("notify.coalesceWindow", "Window (seconds)"), "coalesce.windowMs", cwin),
      h("div", { class: "bar" }, h("button", { type: "submit", class: "primary", id: "rule-save", text: t("notify.create", "Create") }),
        h("a", { href: "#/notify", class: "button", text: t("notify.cancel", "Cancel") })));
    clearFieldErrorOnEdit(form);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault(); clearErrors(form);
      const body = {
        name: name.value,
        kinds: Array.from(form.querySelectorAll(".rule-kind:checked")).map((x) => x.value),
        channels: Array.from(form.querySelectorAll(".rule-channel:checked")).map((x) => x.value),
        taskIds: tasks.value.split(",").map((x) => x.trim()).filter(Boolean),
      };
      if (quiet.value.trim()) {
        const [start, end] = quiet.value.split("-").map((x) => x.trim());
        body.quiet = { zone: zone.value, start: start || "", end: end || "", mode: mode.value };
      }
      if (Number(cmax.value) > 0) body.coalesce = { max: Number(cmax.value), windowMs: Number(cwin.value) * 1000 };
      try {
        await call("POST", base + "/rules", body);
        location.hash = "#/notify";
      } catch (err) {
        if (err.status === 401) return;
        showFieldError(form, err);
      }
    });
    render(g, nav("overview"), form);
    name.focus();
  }

  async function deliveries(params, g) {
    const before = params.get("before");
    const page = await call("GET", base + "/deliveries" + (before ? "?before=" + encodeURIComponent(before) : ""));
    const rows = page.items.map((d) => h("tr", { "data-delivery": String(d.id), "data-status": d.status },
      td("#", String(d.id)),
      td(t("notify.kind", "Kind"), d.kind),
      td(t("notify.name", "Title"), d.title),
      td(t("notify.status", "Status"), h("span", { class: "status", text: d.status })),
      td(t("notify.attempts", "Attempts"), h("ol", { class: "attempts" }, d.log.map((a) =>
        h("li", { text: when(a.atMs) + " — " + (a.statusCode ? "HTTP " + a.statusCode : t("notify.noAnswer", "no answer")) + ", " + a.latencyMs + " ms" + (a.error ? " — " + a.error : "") })))),
      td(t("notify.lastError", "Last error"), d.lastError || ""),
      td(t("notify.created", "Created"), when(d.createdAtMs))));
    render(g, h("h1", { text: t("notify.deliveries", "Delivery log") }), nav("deliveries"),
      rows.length ? h("table", { class: "cards", id: "deliveries" },
        h("thead", {}, h("tr", {}, ["#", t("notify.kind", "Kind"), t("notify.name", "Title"), t("notify.status", "Status"),
          t("notify.attempts", "Attempts"), t("notify.lastError", "Last error"), t("notify.created", "Created")].map((x) => h("th", { text: x })))),
        h("tbody", {}, rows)) : h("p", { id: "no-deliveries", text: t("notify.noDeliveries", "No deliveries yet.") }),
      page.nextBefore ? h("a", { class: "button", id: "more-deliveries", href: "#/notify/deliveries?before=" + page.nextBefore, text: "More" }) : null);
  }

  // Notifications are the edge's for now (the control plane's come later).
  P.register("notify", () => true, show);
})();
