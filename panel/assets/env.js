// ql3 panel: the env store page (ql3-edge; ADR 0038). Served after app.js
// in the same response and plugged in through window.ql3Panel. Values are
// write-only here: the list never has them, the form never fills them in,
// and "Reveal" asks the server for one value (an audited read).
"use strict";
(function () {
  const P = window.ql3Panel;
  if (!P) return;
  const { h, td, api, q, render, field, showFieldError, clearErrors, clearFieldErrorOnEdit } = P;
  const base = "/api/v1/envs";
  const path = (id) => base + "/" + encodeURIComponent(id);

  async function show(p, params, g) {
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
      const reveal = h("button", { type: "button", class: "reveal", text: "Reveal" });
      reveal.addEventListener("click", async () => {
        if (!revealed.hidden) { revealed.hidden = true; revealed.textContent = ""; reveal.textContent = "Reveal"; return; }
        try {
          const v = await api("POST", path(e.id) + "/reveal");
          revealed.textContent = v.value; revealed.hidden = false; reveal.textContent = "Hide";
        } catch (err) { if (err.status !== 401) alert(err.message); }
      });
      // Up: before the previous entry; down: before the one after the next
      // (or last). The server keeps pinned entries on top either way.
      const up = i > 0 ? act(() => api("POST", path(e.id) + "/move", { before: items[i - 1].id })) : null;
      const down = i < items.length - 1 ? act(() => api("POST", path(e.id) + "/move", { before: i + 2 < items.length ? items[i + 2].id : "" })) : null;
      return h("tr", { "data-env": e.name, "data-id": e.id },
        td("Name", h("strong", { class: "mono", text: e.name }), e.pinned ? h("span", { class: "mark", text: "pinned" }) : null),
        td("Value", h("span", { class: "muted", text: "hidden" }), " ", revealed),
        td("Remarks", e.remarks || ""),
        td("Labels", (e.labels || []).join(", ")),
        td("Enabled", e.enabled ? "yes" : "no"),
        td("Actions", h("div", { class: "bar" },
          reveal,
          h("a", { class: "button edit", href: "#/envs/" + encodeURIComponent(e.id) + "/edit", text: "Edit" }),
          h("button", { type: "button", class: "toggle", text: e.enabled ? "Disable" : "Enable",
            onclick: act(() => api("POST", path(e.id) + (e.enabled ? "/disable" : "/enable"))) }),
          h("button", { type: "button", class: "pin", text: e.pinned ? "Unpin" : "Pin",
            onclick: act(() => api("PATCH", path(e.id), { pinned: !e.pinned })) }),
          h("button", { type: "button", class: "up", text: "Up", disabled: !up, onclick: up || undefined }),
          h("button", { type: "button", class: "down", text: "Down", disabled: !down, onclick: down || undefined }),
          h("button", { type: "button", class: "danger delete", text: "Delete", onclick: act(async () => {
            if (!confirm("Delete " + e.name + "?")) return false;
            await api("DELETE", path(e.id));
          }) }))));
    });
    const box = h("input", { type: "search", id: "env-search", name: "q", value: search, placeholder: "name or remarks", "aria-label": "search" });
    const form = h("form", { class: "bar", id: "env-filter", onsubmit: (ev) => { ev.preventDefault(); location.hash = "#/envs" + q({ q: box.value }); } },
      box, h("button", { type: "submit", text: "Search" }));
    render(g,
      h("div", { class: "bar" }, h("h1", { text: "Environment" }), h("a", { class: "button", href: "#/envs/new", id: "new-env", text: "New variable" })),
      h("p", { class: "muted", text: "Every enabled variable reaches every task (a task may narrow it with env.use); several with one name are joined with & in this order. Values are stored encrypted and masked as *** in logs." }),
      form,
      rows.length ? h("table", { class: "cards", id: "envs" },
        h("thead", {}, h("tr", {}, ["Name", "Value", "Remarks", "Labels", "Enabled", "Actions"].map((x) => h("th", { text: x })))),
        h("tbody", {}, rows)) : h("p", { id: "no-envs", text: search ? "No variable matches." : "No variables yet." }),
      h("p", { class: "muted", id: "env-total", text: page.total + " variable(s)" }),
      page.nextCursor ? h("a", { class: "button", id: "more-envs", href: "#/envs" + q({ q: search, cursor: page.nextCursor }), text: "More" }) : null);
  }

  async function envForm(id, g) {
    const e = id ? await api("GET", path(id)) : null;
    const I = (attrs) => h("input", Object.assign({ type: "text", autocomplete: "off", spellcheck: "false" }, attrs));
    const name = I({ value: e ? e.name : "", required: true });
    // The value is write-only: never filled in, and on edit left out of
    // the request unless something was typed.
    const value = h("textarea", { rows: 4, spellcheck: "false", autocomplete: "off", placeholder: e ? "unchanged: type a new value to replace it" : "" });
    const remarks = I({ value: e ? e.remarks || "" : "" });
    const labels = I({ value: e ? (e.labels || []).join(", ") : "" });
    const enabled = h("input", { type: "checkbox", id: "f-enabled", checked: !e || e.enabled });
    const pinned = h("input", { type: "checkbox", id: "f-pinned", checked: !!(e && e.pinned) });
    const form = h("form", { id: "env-form", novalidate: true },
      h("h1", { text: e ? "Edit " + e.name : "New variable" }),
      h("div", { class: "formerr", role: "alert" }),
      field("Name", "name", name, "letters, digits and _, not starting with a digit; QL3_ is reserved"),
      field("Value", "value", value, "write-only: it is never shown here again (Reveal on the list asks for it)"),
      field("Remarks", "remarks", remarks),
      field("Labels, comma-separated", "labels", labels),
      h("label", {}, enabled, " enabled"), " ", h("label", {}, pinned, " pinned"),
      h("div", { class: "bar" }, h("button", { type: "submit", class: "primary", id: "env-save", text: e ? "Save" : "Create" }),
        h("a", { href: "#/envs", class: "button", text: "Cancel" })));
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
        location.hash = "#/envs";
      } catch (err) {
        if (err.status === 401) return;
        showFieldError(form, err);
      }
    });
    render(g, form);
    name.focus();
  }

  // The env store is the edge's (the control plane's comes later).
  P.register("envs", (S) => !S.control, show);
})();
