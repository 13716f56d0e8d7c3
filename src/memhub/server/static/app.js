// memhub's web page: browse every scope (users, agents, runs and their combinations), list,
// search, add, correct or delete its memories. Plain DOM, no framework; every value from the
// server is set as text, never as HTML.

import { $, KEY_STORE, api, clearError, count, guarded } from "./api.js";
import { hideRevisions, loadRevisions, showRevisions } from "./revisions.js";
import { timelineRows } from "./timeline.js";
import { historyChange, historyHeadline } from "./words.js";

// view.scope: {user_id, agent_id, run_id}, each an id or null; the API's scope parameters.
const view = { scope: null, query: null, cursor: null };
const PAGE = 50;
const SCOPE_FIELDS = [["user_id", "user"], ["agent_id", "agent"], ["run_id", "run"]];
// memhub's own metadata keys: shown as "from <role>", not repeated as metadata.
const OWN_KEYS = new Set(["role", "session_id"]);
// Where the scope list comes after the memories (style.css's phone layout).
const PHONE = window.matchMedia("(max-width: 700px)");

// -- key ---------------------------------------------------------------------------------
async function connect() {
  const me = await api("GET", "/v1/me");
  const role = me.is_admin ? "admin" : `tenant ${me.tenant}`;
  $("whoami").textContent = `Connected as “${me.name}” (${role}).`;
  $("workspace").hidden = false;
  $("key-help").hidden = true; // where keys come from matters before connecting, not after
  $("operations").hidden = !me.is_admin;
  await loadScopes();
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
  $("key-help").hidden = false;
  $("operations").hidden = true;
  $("scopes").replaceChildren();
  $("memories").replaceChildren();
  hideRevisions();
  view.scope = null;
}

// -- scopes ------------------------------------------------------------------------------
// "user alice", "agent support-bot", "user ada · run r1": a scope names each id it sets.
function scopeLabel(scope) {
  return SCOPE_FIELDS.filter(([field]) => scope[field] != null)
    .map(([field, kind]) => `${kind} ${scope[field]}`)
    .join(" · ");
}

function sameScope(a, b) {
  return a != null && b != null && SCOPE_FIELDS.every(([f]) => (a[f] ?? null) === (b[f] ?? null));
}

// The scope as query parameters (list, delete all) or body fields (search, add).
function scopeParams(scope) {
  const params = new URLSearchParams();
  for (const [field] of SCOPE_FIELDS) if (scope[field] != null) params.set(field, scope[field]);
  return params;
}

function scopeBody(scope) {
  return Object.fromEntries(SCOPE_FIELDS.filter(([f]) => scope[f] != null).map(([f]) => [f, scope[f]]));
}

async function loadScopes() {
  const { results } = await api("GET", "/v1/scopes");
  $("scopes").replaceChildren(
    ...results.map((scope) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "scope";
      const name = document.createElement("span");
      name.textContent = scopeLabel(scope);
      const counts = document.createElement("span");
      counts.className = "muted";
      counts.textContent = count(scope.memories, "memory", "memories");
      button.append(name, counts);
      button.dataset.scope = JSON.stringify(scopeBody(scope));
      button.setAttribute("aria-pressed", String(sameScope(scope, view.scope)));
      button.addEventListener("click", () => guarded(() => pickScope(scope)));
      item.append(button);
      return item;
    }),
  );
  $("no-scopes").hidden = results.length > 0;
}

async function pickScope(scope) {
  view.scope = Object.fromEntries(SCOPE_FIELDS.map(([f]) => [f, scope[f] ?? null]));
  view.query = null;
  view.cursor = null;
  $("query").value = "";
  $("timeline").hidden = true;
  for (const button of document.querySelectorAll("#scopes button.scope")) {
    const shown = JSON.parse(button.dataset.scope);
    button.setAttribute("aria-pressed", String(sameScope(shown, scopeBody(view.scope))));
  }
  $("memories-heading").textContent = `Memories of ${scopeLabel(view.scope)}`;
  $("search-form").hidden = false;
  $("add-form").hidden = false;
  if (PHONE.matches) $("memories-heading").focus(); // the list picked from is below
  await Promise.all([
    loadMemories(),
    showRevisions(scopeParams(view.scope), scopeLabel(view.scope), memoriesChanged),
  ]);
}

// After a restore or an undo beside the list: the memory is current again.
async function memoriesChanged() {
  await Promise.all([loadMemories(), loadScopes()]);
  if (!$("timeline").hidden) await showTimeline();
}

async function addMemory() {
  const text = $("new-memory").value.trim();
  if (!text) return;
  await api("POST", "/v1/memories", {
    messages: text, ...scopeBody(view.scope), infer: false, wait: true,
  });
  $("new-memory").value = "";
  view.query = null;
  $("query").value = "";
  await Promise.all([loadMemories(), loadScopes()]);
}

async function deleteScope() {
  const label = scopeLabel(view.scope);
  if (!window.confirm(`Delete every memory and turn of ${label}? This cannot be undone.`)) return;
  await api("DELETE", `/v1/memories?${scopeParams(view.scope)}`);
  await Promise.all([loadMemories(), loadScopes(), loadRevisions()]);
}

// -- memories ----------------------------------------------------------------------------
async function loadMemories() {
  $("more").hidden = true;
  if (view.query) {
    await searchMemories();
    return;
  }
  const params = scopeParams(view.scope);
  params.set("limit", PAGE);
  const { results, next_cursor: next } = await api("GET", `/v1/memories?${params}`);
  $("memories").replaceChildren(...results.map((m) => renderMemory(m)));
  showPageState(results.length, next);
}

async function loadMore() {
  const params = scopeParams(view.scope);
  params.set("limit", PAGE);
  params.set("cursor", view.cursor);
  const { results, next_cursor: next } = await api("GET", `/v1/memories?${params}`);
  $("memories").append(...results.map((m) => renderMemory(m)));
  showPageState($("memories").children.length, next);
}

function showPageState(shown, next) {
  view.cursor = next || null;
  $("more").hidden = !next;
  $("memories-status").textContent = next
    ? `${count(shown, "memory", "memories")} shown; more follow.`
    : `${count(shown, "memory", "memories")} in total.`;
}

// The ranked list as memhub ranked it: every result, numbered, best first, with its score.
async function searchMemories() {
  const { results } = await api("POST", "/v1/memories/search", {
    query: view.query, ...scopeBody(view.scope), limit: 20,
  });
  $("memories").replaceChildren(...results.map((m, n) => renderMemory(m, n + 1)));
  $("memories-status").textContent =
    `${count(results.length, "match", "matches")} for “${view.query}”, best first.`;
}

function describe(memory) {
  const parts = [];
  if (memory.score !== undefined) parts.push(`score ${memory.score.toFixed(3)}`);
  parts.push(`added ${new Date(memory.created_at).toLocaleString()}`);
  if (memory.updated_at) parts.push(`edited ${new Date(memory.updated_at).toLocaleString()}`);
  // what was said (an episode, by whom) or a fact extracted from it
  if (memory.kind === "fact") parts.push("fact");
  else if (memory.role) parts.push(`said by ${memory.role}`);
  return parts.join(" · ");
}

// -- timeline ----------------------------------------------------------------------------
// Every fact of the scope, current and superseded, as a bar over its validity interval: a
// superseded fact is a closed bar naming its successor, so one sees what was believed when.
async function showTimeline() {
  const params = scopeParams(view.scope);
  params.set("limit", 500);
  params.set("include_superseded", "true");
  const { results } = await api("GET", `/v1/memories?${params}`);
  const { rows, caption } = timelineRows(results, Date.now());
  $("timeline-rows").replaceChildren(...rows);
  $("timeline-axis").textContent = caption;
  $("timeline-heading").textContent = `Timeline of ${scopeLabel(view.scope)}`;
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

function renderMemory(memory, rank) {
  const item = $("memory-template").content.firstElementChild.cloneNode(true);
  item.dataset.id = memory.id;
  item.querySelector(".text").textContent = memory.memory;
  const meta = item.querySelector(".meta");
  meta.textContent = describe(memory);
  if (rank !== undefined) {
    const badge = document.createElement("span");
    badge.className = "rank";
    badge.textContent = `#${rank}`;
    meta.prepend(badge);
  }
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
  await Promise.all([loadMemories(), loadScopes()]);
}

async function showHistory(memory) {
  const events = await api("GET", `/v1/memories/${memory.id}/history`);
  $("history-events").replaceChildren(
    ...events.map((event) => {
      const item = document.createElement("li");
      const head = document.createElement("strong");
      head.textContent = historyHeadline(event);
      const when = document.createElement("span");
      when.className = "muted";
      when.textContent = ` ${new Date(event.created_at).toLocaleString()}`;
      const change = document.createElement("p");
      change.textContent = historyChange(event);
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
  $("refresh-scopes").addEventListener("click", () => guarded(loadScopes));
  $("to-scopes").addEventListener("click", () => {
    $("scope-nav").scrollIntoView();
    $("scopes-heading").focus();
  });
  $("open-scope").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("open-id").value.trim();
    if (!id) return;
    guarded(() => pickScope({ [$("open-kind").value]: id }));
  });
  $("add-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(addMemory);
  });
  $("delete-scope").addEventListener("click", () => guarded(deleteScope));
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
