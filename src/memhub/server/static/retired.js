// memhub's web page: the "Retired memories" and "Model changes" panels. What a model removed
// (a consolidation DELETE, an agent's or MCP client's forget) is retired, not erased; the
// first panel lists a user's retired memories and restores one. The second lists everything
// a model changed (retire, supersede, reword), newest first, and undoes one under the same
// memory id. Self-contained: its own markup, the tab's API key. Every value from the server
// is set as text, never as HTML.

const KEY_STORE = "memhub.apiKey";

function el(tag, attributes = {}, text = "") {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text) node.textContent = text;
  return node;
}

async function call(method, path) {
  const key = sessionStorage.getItem(KEY_STORE);
  const headers = { Accept: "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  const response = await fetch(path, { method, headers });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    throw new Error(`${response.status}: ${data && data.error ? data.error : response.statusText}`);
  }
  return data;
}

// A collapsible panel with a user form, a status line and a list; ids start with ``name``.
function panelOf(name, summary, label, button, note) {
  const panel = el("details", { id: `${name}-panel`, class: "retired" });
  panel.append(el("summary", {}, summary));
  const form = el("form", { class: "inline", id: `${name}-form` });
  form.append(
    el("label", { for: `${name}-user` }, label),
    el("input", { id: `${name}-user`, name: "user", required: "", autocomplete: "off" }),
    el("button", { type: "submit" }, button),
  );
  const status = el("p", { id: `${name}-status`, class: "muted", "aria-live": "polite" });
  const list = el("ol", { id: `${name}-list`, class: "memories" });
  panel.append(el("p", { class: "muted small" }, note), form, status, list);
  return { panel, form, status, list };
}

function build() {
  return panelOf(
    "retired", "Retired memories (restore what a model removed)", "User", "Show retired",
    "A model never erases: it retires. Retired memories are out of search and lists until " +
    "restored, and are erased after the retention (MEMHUB_RETIRED_RETENTION_DAYS).",
  );
}

function row(item, refresh, status) {
  const entry = el("li", { class: "memory", "data-id": item.id });
  entry.append(
    el("p", { class: "text" }, item.memory),
    el("p", { class: "meta muted" },
      `retired ${new Date(item.retired_at).toLocaleString()} by ${item.retired_by || "unknown"}` +
      (item.reason ? ` — ${item.reason}` : "")),
  );
  const restore = el("button", { type: "button", class: "secondary" }, "Restore");
  restore.addEventListener("click", async () => {
    try {
      await call("POST", `/v1/memories/${item.id}/restore`);
      await refresh();
      status.textContent = `Restored: ${item.memory}`;
    } catch (err) {
      status.textContent = `Not restored (${err.message}).`;
    }
  });
  entry.append(restore);
  return entry;
}

function init() {
  const { panel, form, status, list } = build();
  const anchor = document.getElementById("workspace");
  (anchor ? anchor.parentNode : document.body).insertBefore(
    panel, anchor ? anchor.nextSibling : null,
  );
  const refresh = async () => {
    const user = form.elements.user.value.trim();
    const found = await call("GET", `/v1/memories/retired?user_id=${encodeURIComponent(user)}`);
    list.replaceChildren(...found.results.map((item) => row(item, refresh, status)));
    if (!found.results.length) status.textContent = `No retired memories for ${user}.`;
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "";
    try {
      await refresh();
    } catch (err) {
      status.textContent = `Cannot list retired memories (${err.message}).`;
    }
  });
}

function changeRow(change, refresh, status) {
  const entry = el("li", { class: "memory", "data-change": String(change.id) });
  const cited = change.turn_ids.length ? `, citing turns ${change.turn_ids.join(", ")}` : "";
  entry.append(
    el("p", { class: "meta muted" },
      `${change.event} ${new Date(change.created_at).toLocaleString()} by ` +
      `${change.actor || "unknown"}${cited}` + (change.reason ? ` — ${change.reason}` : "")),
    el("p", { class: "text" }, `before: ${change.before ?? "—"}`),
    el("p", { class: "text" }, `after: ${change.after ?? "(retired)"}`),
  );
  if (change.undone) {
    entry.append(el("p", { class: "meta muted" }, "undone"));
    return entry;
  }
  const undo = el("button", { type: "button", class: "secondary" }, "Undo");
  undo.addEventListener("click", async () => {
    try {
      const user = encodeURIComponent(refresh.user());
      const back = await call("POST", `/v1/memories/changes/${change.id}/undo?user_id=${user}`);
      await refresh();
      status.textContent = `Undone: ${back.memory}`;
    } catch (err) {
      status.textContent = `Not undone (${err.message}).`;
    }
  });
  entry.append(undo);
  return entry;
}

function initChanges() {
  const { panel, form, status, list } = panelOf(
    "changes", "Model changes (undo what a model changed)", "User id", "Show changes",
    "Every memory a model retired, superseded or reworded, newest first. Undo brings the " +
    "memory back under its own id; models may change at most MEMHUB_MODEL_CHANGES_PER_DAY " +
    "memories of a user a day.",
  );
  const retired = document.getElementById("retired-panel");
  retired.parentNode.insertBefore(panel, retired.nextSibling);
  const refresh = async () => {
    const user = encodeURIComponent(refresh.user());
    const found = await call("GET", `/v1/memories/changes?user_id=${user}`);
    list.replaceChildren(...found.results.map((change) => changeRow(change, refresh, status)));
    if (!found.results.length) status.textContent = `No model changes for ${refresh.user()}.`;
  };
  refresh.user = () => form.elements.user.value.trim();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "";
    try {
      await refresh();
    } catch (err) {
      status.textContent = `Cannot list model changes (${err.message}).`;
    }
  });
}

init();
initChanges();
