// memhub's web page: what happened to a memory, in words. History events, retired memories
// and model changes carry an event (ADD, UPDATE, RETIRE, ...) and an actor (user, add,
// consolidation, agent:<name>, mcp, ...); a person reads "retired by the assistant: asked".

const VERBS = {
  ADD: "added",
  UPDATE: "updated",
  DELETE: "deleted",
  RETIRE: "retired",
  SUPERSEDE: "superseded",
  RESTORE: "restored",
  PURGE: "erased",
};

// Who, for each actor memhub records. "add" and "worker" store what a key holder added (the
// worker embeds the turns add() queued), and "user" is a key holder's own edit, delete,
// restore or undo: all three are the person (or app) holding the key, "you".
const ACTORS = {
  user: "you",
  add: "you",
  worker: "you",
  consolidation: "the model",
  mcp: "an assistant over MCP",
  langgraph: "a LangGraph agent",
  import: "an import",
};

// What memhub does of itself, said whole.
const CLOCKWORK = {
  "DELETE expiry": "deleted: its expiration date passed",
  "PURGE retention": "erased: retired longer than the retention period",
};

export function actorWords(actor) {
  if (!actor) return "someone unknown";
  if (actor.startsWith("agent:")) {
    const name = actor.slice("agent:".length);
    return name ? `the assistant (${name})` : "the assistant";
  }
  return ACTORS[actor] || actor;
}

export function eventWords(event) {
  return VERBS[event] || String(event).toLowerCase();
}

const quoted = (text) => `“${text}”`;

// "retired by the assistant (support): asked"; a supersession names the fact that replaced it.
export function historyHeadline(event) {
  const clockwork = CLOCKWORK[`${event.event} ${event.actor}`];
  if (clockwork) return clockwork;
  const said = `${eventWords(event.event)} by ${actorWords(event.actor)}`;
  const metadata = event.metadata || {};
  if (event.event === "RETIRE" && metadata.reason) return `${said}: ${metadata.reason}`;
  if (event.event === "SUPERSEDE" && event.new_memory) {
    return `${said}: replaced by ${quoted(event.new_memory)}`;
  }
  if (event.event === "RESTORE" && metadata.undoes) return `${said}, undoing a model's change`;
  return said;
}

// The text before and after, as far as the event has them: "old → new", or the one of them.
export function historyChange(event) {
  return [event.old_memory, event.new_memory].filter((text) => text != null).join(" → ");
}

const when = (stamp) => new Date(stamp).toLocaleString();

// A retired memory's line: "retired by the assistant (support): asked · 3/12/2026, 14:02:11".
export function retiredLine(item) {
  const said = `retired by ${actorWords(item.retired_by)}`;
  return `${item.reason ? `${said}: ${item.reason}` : said} · ${when(item.retired_at)}`;
}

// A model change's line: "superseded by the model: <reason> · <when> · citing turns 4, 5".
export function changeLine(change) {
  const said = `${eventWords(change.event)} by ${actorWords(change.actor)}`;
  const cited = change.turn_ids.length ? ` · citing turns ${change.turn_ids.join(", ")}` : "";
  return `${change.reason ? `${said}: ${change.reason}` : said} · ${when(change.created_at)}${cited}`;
}
