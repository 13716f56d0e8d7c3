// memhub's web page: browse users, list and search their memories, correct or delete them.
// Plain DOM, no framework; every value from the server is set as text, never as HTML.

const $ = (id) => document.getElementById(id);
const KEY_STORE = "memhub.apiKey";

const view = { user: null, query: null, cursor: null };
const PAGE = 50;
// Search results scoring below this share of the best score are folded away as weaker.
const BEST_SHARE = 0.8;
// memhub's own metadata keys: shown as "from <role>", not repeated as metadata.
const OWN_KEYS = new Set(["role", "session_id"]);

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
  $("operations").hidden = !me.is_admin;
  await loadUsers();
  if (me.is_admin) await loadOperations();
}

// -- operations (admin keys) --------------------------------------------------------------
function cells(row, values) {
  for (const value of values) {
    const cell = document.createElement("td");
    cell.textContent = String(value);
    row.append(cell);
  }
  return row;
}

const LANE_NAMES = { ingest: "ingest (embedding)", consolidate: "consolidate (LLM)" };

function waited(seconds) {
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

async function loadOperations() {
  const [stats, parked] = await Promise.all([
    api("GET", "/v1/jobs/stats"),
    api("GET", "/v1/jobs/parked?limit=50"),
  ]);
  $("queue-total").textContent =
    `${count(stats.queued, "job", "jobs")} queued, ${stats.parked} parked.`;
  $("queue-lanes").replaceChildren(
    ...Object.entries(stats.by_lane).map(([lane, n]) =>
      cells(document.createElement("tr"), [
        `${LANE_NAMES[lane] || lane}`, n.queued, n.running, n.parked,
        n.queued ? waited(n.oldest_queued_seconds) : "–",
      ])),
  );
  $("queue-kinds").replaceChildren(
    ...Object.entries(stats.by_kind).map(([kind, n]) =>
      cells(document.createElement("tr"), [kind, n.queued, n.running, n.parked])),
  );
  $("llm-days").replaceChildren(
    ...stats.llm_per_day.map((d) =>
      cells(document.createElement("tr"), [d.day, d.calls, d.prompt_tokens, d.completion_tokens])),
  );
  $("no-llm").hidden = stats.llm_per_day.length > 0;
  $("parked").replaceChildren(
    ...parked.results.map((job) => {
      const item = document.createElement("li");
      const head = document.createElement("strong");
      head.textContent = `#${job.id} ${job.kind} · ${job.user_id || job.agent_id || job.run_id}`;
      const error = document.createElement("p");
      error.className = "job-error";
      error.textContent = `${job.attempts} attempts: ${job.last_error || "no error recorded"}`;
      const retry = document.createElement("button");
      retry.type = "button";
      retry.className = "secondary";
      retry.textContent = "Retry";
      retry.addEventListener("click", () => guarded(async () => {
        await api("POST", "/v1/jobs/retry", { ids: [job.id] });
        await loadOperations();
      }));
      item.append(head, error, retry);
      return item;
    }),
  );
  $("no-parked").hidden = parked.results.length > 0;
}

function disconnect(message) {
  sessionStorage.removeItem(KEY_STORE);
  $("whoami").textContent = message;
  $("workspace").hidden = true;
  $("operations").hidden = true;
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
  view.cursor = null;
  $("query").value = "";
  $("timeline").hidden = true;
  for (const button of document.querySelectorAll("#users button.user")) {
    button.setAttribute("aria-pressed", String(button.firstChild.textContent === userId));
  }
  $("memories-heading").textContent = `Memories of ${userId}`;
  $("search-form").hidden = false;
  await loadMemories();
}

// -- memories ----------------------------------------------------------------------------
async function loadMemories() {
  $("weaker").hidden = true;
  $("more").hidden = true;
  if (view.query) {
    await searchMemories();
    return;
  }
  const user = encodeURIComponent(view.user);
  const { results, next_cursor: next } = await api(
    "GET", `/v1/memories?user_id=${user}&limit=${PAGE}`,
  );
  $("memories").replaceChildren(...results.map(renderMemory));
  showPageState(results.length, next);
}

async function loadMore() {
  const user = encodeURIComponent(view.user);
  const cursor = encodeURIComponent(view.cursor);
  const { results, next_cursor: next } = await api(
    "GET", `/v1/memories?user_id=${user}&limit=${PAGE}&cursor=${cursor}`,
  );
  $("memories").append(...results.map(renderMemory));
  showPageState($("memories").children.length, next);
}

function showPageState(shown, next) {
  view.cursor = next || null;
  $("more").hidden = !next;
  $("memories-status").textContent = next
    ? `${count(shown, "memory", "memories")} shown; more follow.`
    : `${count(shown, "memory", "memories")} in total.`;
}

async function searchMemories() {
  const { results } = await api("POST", "/v1/memories/search", {
    query: view.query, user_id: view.user, limit: 20,
  });
  const top = results.length ? results[0].score : 0;
  const best = results.filter((m) => m.score >= top * BEST_SHARE);
  const weaker = results.slice(best.length);
  $("memories").replaceChildren(...best.map(renderMemory));
  $("weaker-list").replaceChildren(...weaker.map(renderMemory));
  $("weaker-summary").textContent = `${count(weaker.length, "weaker match", "weaker matches")}`;
  $("weaker").open = false;
  $("weaker").hidden = weaker.length === 0;
  $("memories-status").textContent =
    `${count(best.length, "best match", "best matches")} for “${view.query}”.`;
}

function describe(memory) {
  const parts = [];
  if (memory.score !== undefined) parts.push(`score ${memory.score.toFixed(3)}`);
  parts.push(`added ${new Date(memory.created_at).toLocaleString()}`);
  if (memory.updated_at) parts.push(`edited ${new Date(memory.updated_at).toLocaleString()}`);
  if (memory.role) parts.push(`from ${memory.role}`);
  return parts.join(" · ");
}

// -- timeline ----------------------------------------------------------------------------
// Every fact of the user, current and superseded, as a bar over its validity interval: a
// superseded fact is a closed bar naming its successor, so one sees what was believed when.
async function showTimeline() {
  const user = encodeURIComponent(view.user);
  const { results } = await api(
    "GET", `/v1/memories?user_id=${user}&limit=500&include_superseded=true`,
  );
  const now = Date.now();
  const facts = results
    .map((m) => ({ ...m, from: Date.parse(m.valid_from), to: m.valid_to ? Date.parse(m.valid_to) : now }))
    .sort((a, b) => a.from - b.from);
  const start = facts.length ? Math.min(...facts.map((f) => f.from)) : now;
  const span = Math.max(now - start, 1);
  const byId = new Map(facts.map((f) => [f.id, f]));
  $("timeline-rows").replaceChildren(
    ...facts.map((fact) => {
      const row = document.createElement("li");
      row.className = fact.valid_to ? "fact closed" : "fact open";
      const label = document.createElement("p");
      label.className = "label";
      label.textContent = fact.memory;
      const track = document.createElement("div");
      track.className = "track";
      const bar = document.createElement("div");
      bar.className = "bar";
      // CSSOM, not a style attribute: the page's CSP allows no inline styles.
      bar.style.left = `${((fact.from - start) / span) * 100}%`;
      bar.style.width = `${Math.max(((fact.to - fact.from) / span) * 100, 1)}%`;
      track.append(bar);
      const when = document.createElement("p");
      when.className = "muted when";
      const from = new Date(fact.from).toLocaleString();
      if (fact.valid_to) {
        const next = byId.get(fact.superseded_by);
        const successor = next ? ` → “${next.memory}”` : "";
        when.textContent = `${from} – ${new Date(fact.to).toLocaleString()}${successor}`;
      } else {
        when.textContent = `${from} – now`;
      }
      row.append(label, track, when);
      return row;
    }),
  );
  $("timeline-heading").textContent = `Timeline of ${view.user}`;
  $("timeline").hidden = false;
}

function renderMetadata(metadata) {
  const shown = Object.entries(metadata || {}).filter(([key]) => !OWN_KEYS.has(key));
  return shown.map(([key, value]) => {
    const chip = document.createElement("li");
    chip.textContent = `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`;
    return chip;
  });
}

function renderMemory(memory) {
  const item = $("memory-template").content.firstElementChild.cloneNode(true);
  item.dataset.id = memory.id;
  item.querySelector(".text").textContent = memory.memory;
  item.querySelector(".meta").textContent = describe(memory);
  const chips = renderMetadata(memory.metadata);
  item.querySelector(".metadata").replaceChildren(...chips);
  item.querySelector(".metadata").hidden = chips.length === 0;
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
    guarded(async () => {
      try {
        await connect();
      } catch (err) {
        // The typed key stays in the field so a typo can be fixed, not retyped.
        disconnect("Not connected.");
        throw err;
      }
      $("api-key").value = "";
    });
  });
  $("more").addEventListener("click", () => guarded(loadMore));
  $("show-timeline").addEventListener("click", () => guarded(showTimeline));
  $("hide-timeline").addEventListener("click", () => { $("timeline").hidden = true; });
  $("forget-key").addEventListener("click", () => {
    clearError();
    disconnect("Key forgotten; not connected.");
  });
  $("refresh-users").addEventListener("click", () => guarded(loadUsers));
  $("refresh-operations").addEventListener("click", () => guarded(loadOperations));
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    view.query = $("query").value.trim() || null;
    guarded(loadMemories);
  });
  $("show-all").addEventListener("click", () => {
    view.query = null;
    view.cursor = null;
    $("query").value = "";
    guarded(loadMemories);
  });
  if (sessionStorage.getItem(KEY_STORE)) guarded(connect);
}

init();
