// ql3 panel: the Access page (ADR 0048, 0049, 0060): accounts with their
// second factor, scoped API tokens, QingLong Open API apps (the edge's:
// the control plane's are per project) and the sign-in log. Served after app.js in the same response and plugged in
// through window.ql3Panel. Secrets (a new token, an app's client secret)
// are shown once, right after they were made, and never again.
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const { h, td, api, when, render } = P;
  const t = P.t || ((key, english) => english);
  const NATIVE = ["read-only", "runs", "envs", "scripts", "admin"];
  const APP = ["envs", "crons", "scripts", "logs", "system"];
  const enc = encodeURIComponent;

  if (P.addMessages) P.addMessages({
    en: {
      "access.title": "Access", "access.users": "Accounts", "access.tokens": "API tokens", "access.apps": "Open API apps",
      "access.signins": "Sign-in log", "access.username": "Username", "access.password": "Password", "access.add": "Add account",
      "access.totp": "Two-factor", "access.locked": "Locked until", "access.created": "Created", "access.actions": "Actions",
      "access.setPassword": "Set password", "access.totpSetup": "Set up two-factor", "access.totpOff": "Turn two-factor off",
      "access.totpScan": "Add this secret to an authenticator app, then enter the code it shows.",
      "access.confirm": "Confirm", "access.delete": "Delete", "access.revoke": "Revoke", "access.name": "Name",
      "access.scopes": "Scopes", "access.expiry": "Expires", "access.expires": "Expires in days (empty: never)", "access.create": "Create",
      "access.live": "Live", "access.never": "never", "access.shownOnce": "Copy it now: it is shown this once.",
      "access.clientId": "Client ID", "access.outcome": "Outcome", "access.from": "From", "access.at": "At",
      "access.yes": "yes", "access.no": "no", "access.none": "None yet.",
      "access.appsHelp": "QingLong tools exchange client_id and client_secret for a token at GET /open/auth/token and call /open/envs and /open/crons. Every read of an env value by an app is audited.",
      "access.tokensHelp": "Scoped tokens for scripts and automation; the admin token keeps working.",
    },
    "zh-CN": {
      "access.title": "访问控制", "access.users": "账号", "access.tokens": "API 令牌", "access.apps": "开放 API 应用",
      "access.signins": "登录日志", "access.username": "用户名", "access.password": "密码", "access.add": "添加账号",
      "access.totp": "两步验证", "access.locked": "锁定至", "access.created": "创建时间", "access.actions": "操作",
      "access.setPassword": "设置密码", "access.totpSetup": "设置两步验证", "access.totpOff": "关闭两步验证",
      "access.totpScan": "将此密钥添加到身份验证器应用，然后输入它显示的验证码。",
      "access.confirm": "确认", "access.delete": "删除", "access.revoke": "吊销", "access.name": "名称",
      "access.scopes": "权限范围", "access.expiry": "过期时间", "access.expires": "有效天数（留空：永不过期）", "access.create": "创建",
      "access.live": "有效", "access.never": "永不", "access.shownOnce": "请立即复制：它只显示这一次。",
      "access.clientId": "Client ID", "access.outcome": "结果", "access.from": "来源", "access.at": "时间",
      "access.yes": "是", "access.no": "否", "access.none": "暂无。",
      "access.appsHelp": "青龙工具用 client_id 和 client_secret 在 GET /open/auth/token 换取令牌，再调用 /open/envs 和 /open/crons。应用每次读取变量值都会记入审计日志。",
      "access.tokensHelp": "供脚本和自动化使用的限定范围令牌；管理员令牌仍然有效。",
    },
  });

  // act runs a change and redraws the page; a failure is shown in box.
  const act = (box, fn) => async (ev) => {
    if (ev) ev.preventDefault();
    box.textContent = "";
    try { if (await fn() === false) return; } catch (e) { if (e.status !== 401) box.textContent = e.message; return; }
    P.route();
  };
  const table = (id, heads, rows) => rows.length
    ? h("table", { class: "cards", id }, h("thead", {}, h("tr", {}, heads.map((x) => h("th", { text: x })))), h("tbody", {}, rows))
    : h("p", { class: "muted", text: t("access.none", "None yet.") });
  const checks = (name, list) => h("div", { class: "bar", "data-field": name },
    // A scope is an identifier (the CLI and the API take it as written):
    // shown as code, like other identifiers, not translated.
    list.map((s) => h("label", {}, h("input", { type: "checkbox", value: s, name }), " ", h("code", { class: "mono", text: s }))));
  const checked = (box) => Array.from(box.querySelectorAll("input:checked")).map((i) => i.value);
  const once = (id, text) => h("div", { class: "notice", id },
    h("p", { text: t("access.shownOnce", "Copy it now: it is shown this once.") }), h("code", { class: "mono", text }));

  async function show(p, params, g, fresh) {
    const control = P.S && P.S.control;
    const [users, tokens, apps, signins] = await Promise.all([
      api("GET", "/api/v1/users"), api("GET", "/api/v1/tokens"), control ? null : api("GET", "/api/v1/apps"), api("GET", "/api/v1/signins?limit=50")]);
    const err = h("div", { class: "formerr", role: "alert", id: "access-err" });
    render(g,
      h("h1", { text: t("access.title", "Access") }), err, fresh || null,
      usersSection(users.items, err), tokensSection(tokens.items, err, g), control ? null : appsSection(apps.items, err, g),
      h("h2", { text: t("access.signins", "Sign-in log") }),
      table("signins", [t("access.at", "At"), t("access.username", "Username"), t("access.outcome", "Outcome"), t("access.from", "From")],
        signins.items.map((s) => h("tr", { "data-outcome": s.outcome },
          td(t("access.at", "At"), when(s.atMs)), td(t("access.username", "Username"), s.username),
          td(t("access.outcome", "Outcome"), s.outcome), td(t("access.from", "From"), s.remote)))));
  }

  function usersSection(items, err) {
    const user = h("input", { type: "text", id: "new-user", autocomplete: "off", required: true });
    const pass = h("input", { type: "password", id: "new-user-password", autocomplete: "new-password", required: true });
    const rows = items.map((u) => {
      const path = "/api/v1/users/" + enc(u.username);
      const pw = h("input", { type: "password", class: "set-password", autocomplete: "new-password", "aria-label": t("access.password", "Password") });
      const setup = h("div", { class: "totp-setup" });
      const startSetup = act(err, async () => {
        const s = await api("POST", path + "/totp/setup");
        const code = h("input", { type: "text", class: "totp-code", inputmode: "numeric", maxlength: "6", "aria-label": "code" });
        setup.replaceChildren(h("p", { text: t("access.totpScan", "Add this secret to an authenticator app, then enter the code it shows.") }),
          h("code", { class: "mono totp-secret", text: s.secret }), h("p", { class: "muted mono", text: s.uri }),
          h("form", { class: "bar", onsubmit: act(err, () => api("PUT", path + "/totp", { secret: s.secret, code: code.value })) },
            code, h("button", { type: "submit", class: "primary totp-confirm", text: t("access.confirm", "Confirm") })));
        return false;
      });
      return h("tr", { "data-user": u.username },
        td(t("access.username", "Username"), h("strong", { text: u.username })),
        td(t("access.totp", "Two-factor"), u.totp ? t("access.yes", "yes") : t("access.no", "no")),
        td(t("access.locked", "Locked until"), u.lockedUntilMs ? when(u.lockedUntilMs) : "—"),
        td(t("access.created", "Created"), when(u.createdAtMs)),
        td(t("access.actions", "Actions"),
          h("form", { class: "bar", onsubmit: act(err, () => api("PUT", path + "/password", { password: pw.value })) },
            pw, h("button", { type: "submit", text: t("access.setPassword", "Set password") })),
          h("div", { class: "bar" },
            u.totp ? h("button", { type: "button", class: "totp-off", text: t("access.totpOff", "Turn two-factor off"), onclick: act(err, () => api("DELETE", path + "/totp")) })
              : h("button", { type: "button", class: "totp-start", text: t("access.totpSetup", "Set up two-factor"), onclick: startSetup }),
            h("button", { type: "button", class: "danger delete", text: t("access.delete", "Delete"), onclick: act(err, async () => {
              if (!confirm(t("access.delete", "Delete") + " " + u.username + "?")) return false;
              await api("DELETE", path);
            }) })),
          setup));
    });
    return h("section", { id: "access-users" },
      h("h2", { text: t("access.users", "Accounts") }),
      table("users", [t("access.username", "Username"), t("access.totp", "Two-factor"), t("access.locked", "Locked until"),
        t("access.created", "Created"), t("access.actions", "Actions")], rows),
      h("form", { class: "bar", id: "user-form", onsubmit: act(err, () => api("POST", "/api/v1/users", { username: user.value, password: pass.value })) },
        h("label", { for: "new-user", text: t("access.username", "Username") }), user,
        h("label", { for: "new-user-password", text: t("access.password", "Password") }), pass,
        h("button", { type: "submit", class: "primary", id: "user-add", text: t("access.add", "Add account") })));
  }

  function tokensSection(items, err, g) {
    const name = h("input", { type: "text", id: "token-name", autocomplete: "off", required: true });
    const days = h("input", { type: "number", id: "token-days", min: "1", max: "3650" });
    const scopes = checks("token-scopes", NATIVE);
    const create = async (ev) => {
      ev.preventDefault(); err.textContent = "";
      const body = { name: name.value, scopes: checked(scopes) };
      if (days.value) body.expiresAtMs = Date.now() + Number(days.value) * 86400000;
      try { const r = await api("POST", "/api/v1/tokens", body); await show([], null, g, once("new-token", r.token)); }
      catch (e) { if (e.status !== 401) err.textContent = e.message; }
    };
    return h("section", { id: "access-tokens" },
      h("h2", { text: t("access.tokens", "API tokens") }),
      h("p", { class: "muted", text: t("access.tokensHelp", "Scoped tokens for scripts and automation; the admin token keeps working.") }),
      table("tokens", [t("access.name", "Name"), t("access.scopes", "Scopes"), t("access.live", "Live"), t("access.expiry", "Expires"), t("access.actions", "Actions")],
        items.map((k) => h("tr", { "data-token": k.id },
          td(t("access.name", "Name"), k.name), td(t("access.scopes", "Scopes"), h("code", { class: "mono", text: k.scopes.join(", ") })),
          td(t("access.live", "Live"), k.live ? t("access.yes", "yes") : t("access.no", "no")),
          td(t("access.expiry", "Expires"), k.expiresAtMs ? when(k.expiresAtMs) : t("access.never", "never")),
          td(t("access.actions", "Actions"), k.revokedAtMs ? "—" : h("button", { type: "button", class: "danger revoke", text: t("access.revoke", "Revoke"),
            onclick: act(err, () => api("DELETE", "/api/v1/tokens/" + enc(k.id))) }))))),
      h("form", { id: "token-form", onsubmit: create },
        h("label", { for: "token-name", text: t("access.name", "Name") }), name, scopes,
        h("label", { for: "token-days", text: t("access.expires", "Expires in days (empty: never)") }), days,
        h("button", { type: "submit", class: "primary", id: "token-create", text: t("access.create", "Create") })));
  }

  function appsSection(items, err, g) {
    const name = h("input", { type: "text", id: "app-name", autocomplete: "off", required: true });
    const scopes = checks("app-scopes", APP);
    const create = async (ev) => {
      ev.preventDefault(); err.textContent = "";
      try {
        const r = await api("POST", "/api/v1/apps", { name: name.value, scopes: checked(scopes) });
        await show([], null, g, once("new-app", "client_id=" + r.clientId + "  client_secret=" + r.clientSecret));
      } catch (e) { if (e.status !== 401) err.textContent = e.message; }
    };
    return h("section", { id: "access-apps" },
      h("h2", { text: t("access.apps", "Open API apps") }),
      h("p", { class: "muted", text: t("access.appsHelp", "QingLong tools exchange client_id and client_secret for a token at GET /open/auth/token and call /open/envs and /open/crons. Every read of an env value by an app is audited.") }),
      table("apps", [t("access.name", "Name"), t("access.clientId", "Client ID"), t("access.scopes", "Scopes"), t("access.actions", "Actions")],
        items.map((a) => h("tr", { "data-app": a.name },
          td(t("access.name", "Name"), a.name), td(t("access.clientId", "Client ID"), h("code", { class: "mono", text: a.clientId })),
          td(t("access.scopes", "Scopes"), h("code", { class: "mono", text: a.scopes.join(", ") })),
          td(t("access.actions", "Actions"), h("button", { type: "button", class: "danger delete", text: t("access.delete", "Delete"),
            onclick: act(err, async () => {
              if (!confirm(t("access.delete", "Delete") + " " + a.name + "?")) return false;
              await api("DELETE", "/api/v1/apps/" + a.id);
            }) }))))),
      h("form", { id: "app-form", onsubmit: create },
        h("label", { for: "app-name", text: t("access.name", "Name") }), name, scopes,
        h("button", { type: "submit", class: "primary", id: "app-create", text: t("access.create", "Create") })));
  }

  // Both servers: accounts, tokens and the sign-in log (ADR 0060).
  P.register("access", () => true, show);
})();
