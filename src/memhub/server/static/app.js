// memhub's web page: browse users, list and search their memories, correct or delete them.
// Plain DOM, no framework; every value from the server is set as text, never as HTML.

const $ = (id) => document.getElementById(id);
const KEY_STORE = "memhub.apiKey";

const view = { user: null, query: null };

const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

// -- talking to the API ------------------------------------------------------------------
class ApiError extends Error {}

async function api(method, path, body) {
  const key = sessionStorage.getItem(KEY_STORE);
  const headers = { Accept: "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(`Cannot reach the server (${err.message}).`);
  }
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const message = data && data.error ? data.error : response.statusText;
    throw new ApiError(`${response.status}: ${message}`);
  }
  return data;
}

function showError(err) {
  const box = $("error");
  box.textContent = err instanceof Error ? err.message : String(err);
  box.hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

async function guarded(action) {
  clearError();
  try {
    await action();
  } catch (err) {
    showError(err);
    if (!(err instanceof ApiError)) console.error(err);
  }
}

// -- key ---------------------------------------------------------------------------------
async function connect() {
  const me = await api("GET", "/v1/me");
  const role = me.is_admin ? "admin" : `tenant ${me.tenant}`;
  $("whoami").textContent = `Connected as “${me.name}” (${role}).`;
  $("workspace").hidden = false;
  await loadUsers();
}

function disconnect(message) {
  sessionStorage.removeItem(KEY_STORE);
  $("whoami").textContent = message;
  $("workspace").hidden = true;
  $("users").replaceChildren();
  $("memories").replaceChildren();
  view.user = null;
}

// -- users -------------------------------------------------------------------------------
async function loadUsers() {
  const { results } = await api("GET", "/v1/users");
  const list = $("users");
  list.replaceChildren(
    ...results.map((user) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "user";
      button.textContent = user.user_id;
      button.setAttribute("aria-pressed", String(user.user_id === view.user));
      const counts = document.createElement("span");
      counts.className = "muted";
      counts.textContent =
        ` ${count(user.memories, "memory", "memories")} · ${count(user.turns, "turn", "turns")}`;
      button.append(counts);
      button.addEventListener("click", () => guarded(() => pickUser(user.user_id)));
      item.append(button);
      return item;
    }),
  );
  $("no-users").hidden = results.length > 0;
}

async function pickUser(userId) {
  view.user = userId;
  view.query = null;
  $("query").value = "";
  for (const button of document.querySelectorAll("#users button.user")) {
    button.setAttribute("aria-pressed", String(button.firstChild.textContent === userId));
  }
  $("memories-heading").textContent = `Memories of ${userId}`;
  $("search-form").hidden = false;
  await loadMemories();
}

// -- memories ----------------------------------------------------------------------------
async function loadMemories() {
  const user = encodeURIComponent(view.user);
  const { results } = view.query
    ? await api("POST", "/v1/memories/search", { query: view.query, user_id: view.user, limit: 20 })
    : await api("GET", `/v1/memories?user_id=${user}&limit=200`);
  $("memories").replaceChildren(...results.map(renderMemory));
  const what = view.query ? `matching “${view.query}”` : "in total";
  $("memories-status").textContent = `${count(results.length, "memory", "memories")} ${what}.`;
}

function describe(memory) {
  const parts = [];
  if (memory.score !== undefined) parts.push(`score ${memory.score.toFixed(3)}`);
  parts.push(`added ${new Date(memory.created_at).toLocaleString()}`);
  if (memory.updated_at) parts.push(`edited ${new Date(memory.updated_at).toLocaleString()}`);
  if (memory.role) parts.push(`from ${memory.role}`);
  return parts.join(" · ");
}

function renderMemory(memory) {
  const item = $("memory-template").content.firstElementChild.cloneNode(true);
  item.dataset.id = memory.id;
  item.querySelector(".text").textContent = memory.memory;
  item.querySelector(".meta").textContent = describe(memory);
  const on = (action, handler) =>
    item
      .querySelector(`[data-action="${action}"]`)
      .addEventListener("click", () => guarded(() => handler(memory, item)));
  on("history", showHistory);
  on("edit", startEdit);
  on("delete", deleteMemory);
  return item;
}

function startEdit(memory, item) {
  if (item.querySelector("form")) return;
  const form = document.createElement("form");
  form.className = "edit";
  const id = `edit-${memory.id}`;
  const label = document.createElement("label");
  label.htmlFor = id;
  label.textContent = "Corrected text";
  const area = document.createElement("textarea");
  area.id = id;
  area.required = true;
  area.rows = 3;
  area.value = memory.memory;
  const save = document.createElement("button");
  save.type = "submit";
  save.textContent = "Save";
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.className = "secondary";
  cancel.textContent = "Cancel";
  cancel.addEventListener("click", () => form.remove());
  form.append(label, area, save, cancel);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      await api("PUT", `/v1/memories/${memory.id}`, { text: area.value });
      await loadMemories();
    });
  });
  item.querySelector(".actions").after(form);
  area.focus();
}

async function deleteMemory(memory) {
  if (!window.confirm(`Delete this memory?\n\n${memory.memory}`)) return;
  await api("DELETE", `/v1/memories/${memory.id}`);
  await Promise.all([loadMemories(), loadUsers()]);
}

async function showHistory(memory) {
  const events = await api("GET", `/v1/memories/${memory.id}/history`);
  $("history-events").replaceChildren(
    ...events.map((event) => {
      const item = document.createElement("li");
      const head = document.createElement("strong");
      head.textContent = `${event.event} by ${event.actor || "unknown"}`;
      const when = document.createElement("span");
      when.className = "muted";
      when.textContent = ` ${new Date(event.created_at).toLocaleString()}`;
      const change = document.createElement("p");
      change.textContent = [event.old_memory, event.new_memory]
        .filter((text) => text !== null)
        .join(" → ");
      item.append(head, when, change);
      return item;
    }),
  );
  $("history").showModal();
}

// -- wiring ------------------------------------------------------------------------------
function init() {
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_STORE, $("api-key").value.trim());
    $("api-key").value = "";
    guarded(async () => {
      try {
        await connect();
      } catch (err) {
        disconnect("Not connected.");
        throw err;
      }
    });
  });
  $("forget-key").addEventListener("click", () => {
    clearError();
    disconnect("Key forgotten; not connected.");
  });
  $("refresh-users").addEventListener("click", () => guarded(loadUsers));
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    view.query = $("query").value.trim() || null;
    guarded(loadMemories);
  });
  $("show-all").addEventListener("click", () => {
    view.query = null;
    $("query").value = "";
    guarded(loadMemories);
  });
  if (sessionStorage.getItem(KEY_STORE)) guarded(connect);
}

init();
