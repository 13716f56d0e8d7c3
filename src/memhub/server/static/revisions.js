// memhub's web page: beside the memories of the chosen scope, what a model removed and what
// it changed. A model never erases: it retires, and the "Retired" list restores one; "Model
// changes" lists every retire, supersession and rewording, newest first, and undoes one
// under the same memory id. After either, the memories beside are listed again.

import { $, api, el } from "./api.js";
import { changeLine, retiredLine } from "./words.js";

// The chosen scope as query parameters, and what to reload once a memory is back.
const shown = { params: null, label: "", memoriesChanged: async () => {} };

async function afterwards(status, message) {
  await Promise.all([loadRevisions(), shown.memoriesChanged()]);
  status.textContent = message;
}

function actionButton(label, name, act) {
  const button = el("button", { type: "button", class: "secondary", "aria-label": name }, label);
  button.addEventListener("click", act);
  return button;
}

function retiredRow(item) {
  const entry = el("li", { class: "memory", "data-id": item.id });
  const status = $("retired-status");
  const restore = actionButton("Restore", `Restore “${item.memory}”`, async () => {
    try {
      await api("POST", `/v1/memories/${item.id}/restore?${shown.params}`);
      $("retired-heading").focus(); // the row goes away; keep the keyboard nearby
      await afterwards(status, `Restored: ${item.memory}`);
    } catch (err) {
      status.textContent = `Not restored (${err.message}).`;
    }
  });
  entry.append(
    el("p", { class: "text" }, item.memory),
    el("p", { class: "meta muted" }, retiredLine(item)),
    restore,
  );
  return entry;
}

function changeRow(change) {
  const entry = el("li", { class: "memory", "data-change": String(change.id) });
  entry.append(
    el("p", { class: "meta muted" }, changeLine(change)),
    el("p", { class: "text" }, `before: ${change.before ?? "—"}`),
    el("p", { class: "text" }, `after: ${change.after ?? "(retired)"}`),
  );
  if (change.undone) {
    entry.append(el("p", { class: "meta muted" }, "undone"));
    return entry;
  }
  const status = $("changes-status");
  entry.append(actionButton("Undo", `Undo: ${changeLine(change)}`, async () => {
    try {
      const back = await api("POST", `/v1/memories/changes/${change.id}/undo?${shown.params}`);
      $("changes-heading").focus();
      await afterwards(status, `Undone: ${back.memory}`);
    } catch (err) {
      status.textContent = `Not undone (${err.message}).`;
    }
  }));
  return entry;
}

// Both lists of the scope shown; their headings carry the counts.
export async function loadRevisions() {
  if (shown.params === null) return;
  const [retired, changes] = await Promise.all([
    api("GET", `/v1/memories/retired?${shown.params}`),
    api("GET", `/v1/memories/changes?${shown.params}`),
  ]);
  $("retired-list").replaceChildren(...retired.results.map(retiredRow));
  $("retired-count").textContent = `(${retired.results.length})`;
  $("retired-status").textContent = retired.results.length
    ? "" : `Nothing retired of ${shown.label}.`;
  $("changes-list").replaceChildren(...changes.results.map(changeRow));
  const more = changes.next_cursor ? "+" : "";
  $("changes-count").textContent = `(${changes.results.length}${more})`;
  $("changes-status").textContent = changes.results.length
    ? "" : `No model changes to ${shown.label}.`;
}

// Show the lists of ``params`` (the scope's query parameters), called ``label``;
// ``memoriesChanged`` reloads the memory list after a restore or an undo.
export async function showRevisions(params, label, memoriesChanged) {
  Object.assign(shown, { params, label, memoriesChanged });
  $("revisions").hidden = false;
  await loadRevisions();
}

export function hideRevisions() {
  Object.assign(shown, { params: null, label: "" });
  $("revisions").hidden = true;
  for (const id of ["retired-list", "changes-list"]) $(id).replaceChildren();
  for (const id of ["retired-status", "changes-status", "retired-count", "changes-count"]) {
    $(id).textContent = "";
  }
}
