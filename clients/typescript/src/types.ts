/** The shapes of the API, in Mem0's TypeScript spelling (camelCase keys). */

/** A chat message as OpenAI, Mem0 and AI Kit shape it. */
export interface Message {
  role: "system" | "user" | "assistant" | "tool" | (string & {});
  content: string;
  [extra: string]: unknown;
}

/** Whose memory: at least one of these on every scoped call. */
export interface EntityOptions {
  userId?: string;
  agentId?: string;
  runId?: string;
}

export interface AddOptions extends EntityOptions {
  /** The caller's keys, stored as given (never case-converted). */
  metadata?: Record<string, unknown>;
  /** Let the server's LLM extract facts (when it has one); false keeps each message as said. */
  infer?: boolean;
  /** When the messages were said: a Date, ISO 8601, or Unix seconds. */
  timestamp?: Date | string | number;
  /** Answer once the memories are searchable (memhub's `wait`). */
  wait?: boolean;
  /** Mem0's: a date `"YYYY-MM-DD"` is the memory's last day (UTC); an ISO 8601 datetime or a
   * Date is the instant it expires. From then on no `search`, `get` or `getAll` returns it.
   * Facts the server's LLM extracts do not inherit it. */
  expirationDate?: Date | string;
  /** Sending the same key again returns the first answer and writes nothing. */
  idempotencyKey?: string;
}

export interface SearchOptions extends EntityOptions {
  /** Memories returned at most (Mem0's `topK` works too). */
  limit?: number;
  topK?: number;
  /** Mem0's filter syntax. `user_id` / `agent_id` / `run_id` given here as plain strings are
   * sent as the scope (Mem0 v3 puts the scope in `filters`). */
  filters?: Record<string, unknown>;
  /** Drop hits scoring below this, 0-1. */
  threshold?: number;
  /** Also return facts that a newer one superseded. */
  includeSuperseded?: boolean;
  /** Only what was true at that moment. */
  asOf?: Date | string;
  /** Accepted for the plan's call; metadata is always included. */
  includeMetadata?: boolean;
}

export interface GetAllOptions extends EntityOptions {
  /** Page size (Mem0's `topK` / `pageSize` work too); the server's default is 100. */
  limit?: number;
  topK?: number;
  pageSize?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
  includeSuperseded?: boolean;
  /** Only the scope ids (`user_id`, `agent_id`, `run_id`) are honoured here. */
  filters?: Record<string, unknown>;
}

export interface UpdateOptions {
  text?: string;
  /** Mem0's older name for `text`. */
  data?: string;
  /** Merged into the stored keys, as Mem0's OSS `update` does; see `replaceMetadata`. */
  metadata?: Record<string, unknown>;
  /** Replace the caller's keys instead of merging (needs `text`; memhub's `PUT`). */
  replaceMetadata?: boolean;
}

/** One memory. Keys the server adds later arrive camelCased too. */
export interface MemoryItem {
  id: string;
  memory: string;
  hash?: string;
  metadata?: Record<string, unknown>;
  createdAt?: string;
  updatedAt?: string | null;
  validFrom?: string;
  validTo?: string | null;
  score?: number;
  userId?: string | null;
  agentId?: string | null;
  runId?: string | null;
  role?: string | null;
  memoryType?: string | null;
  supersededBy?: string | null;
  event?: string;
  /** Search only, for a memory longer than the embedder's window: `memory` is the passage
   * nearest the query, characters [start, end) of the whole text (`get(id)` returns it). */
  passage?: Passage;
  [extra: string]: unknown;
}

/** Where a search result's passage lies in its memory's whole text. */
export interface Passage {
  start: number;
  end: number;
  length: number;
}

/** What `add` answers per message: a memory (with `wait`, or one per message without an
 * LLM, `status: "PENDING"`), or, when an LLM will extract facts, the queued work. */
export interface AddedMemory {
  id?: string;
  memory?: string;
  event?: string;
  role?: string;
  status?: string;
  message?: string;
  eventId?: string;
  [extra: string]: unknown;
}

export interface AddResult {
  results: AddedMemory[];
  /** `PENDING` (queued) or `DONE` (with `wait`). */
  status?: string;
  queuedTurnIds?: number[];
  /** With `wait`: the server's deadline passed first; `results` is what was ready. */
  timedOut?: boolean;
  /** Opaque; this object passes it back to its next search of the scope by itself. */
  causalToken?: string;
  [extra: string]: unknown;
}

export interface SearchResult {
  results: MemoryItem[];
}

export interface MemoryPage {
  results: MemoryItem[];
  /** Present when more memories follow; pass it back as `cursor`. */
  nextCursor?: string;
}

export interface UpdateResult {
  message: string;
  result: MemoryItem;
}

export interface DeleteResult {
  message: string;
}

export interface DeleteAllResult {
  message: string;
  deleted: number;
}

export interface MemoryHistoryEntry {
  id: string;
  memoryId: string;
  event: "ADD" | "UPDATE" | "SUPERSEDE" | "DELETE" | "RETIRE" | "RESTORE" | "PURGE" | (string & {});
  oldMemory: string | null;
  newMemory: string | null;
  actor: string | null;
  turnIds: number[];
  createdAt: string;
  isDeleted: boolean;
  /** What the event linked: `superseded_by`, `previous_version` (a consolidation UPDATE's
   * earlier wording, restorable), `retired`; a RETIRE's `reason`. */
  metadata: Record<string, unknown>;
  [extra: string]: unknown;
}

export interface RetiredOptions extends EntityOptions {
  /** At most this many (the server's default is 100). */
  limit?: number;
}

/** A memory a model removed (consolidation, an agent's `forget`, MCP's `delete_memory`):
 * kept, out of every read, until `restore`d, purged or erased. */
export interface RetiredMemory extends MemoryItem {
  retiredAt: string;
  /** `consolidation`, `agent:<name>` or `mcp`. */
  retiredBy?: string | null;
  reason?: string | null;
  turnIds: number[];
}

export interface RetiredList {
  /** Most recently retired first. */
  results: RetiredMemory[];
}

/** Who a key belongs to (`GET /v1/me`). */
export interface KeyOwner {
  name: string;
  tenant: string | null;
  isAdmin: boolean;
  [extra: string]: unknown;
}
