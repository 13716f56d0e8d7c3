/**
 * `Memory`: memhub's REST API (`memhub serve`) behind Mem0's TypeScript method names.
 *
 * Requests go out in the server's snake_case; answers come back camelCased at the top level
 * of each memory (Mem0's SDK spelling), with `metadata` left exactly as stored.
 */

import {
  ConfigurationError,
  MemoryError,
  MemoryNotFoundError,
  NetworkError,
  ValidationError,
  errorFromResponse,
} from "./errors.js";
import type {
  AddOptions,
  AddResult,
  DeleteAllResult,
  DeleteResult,
  EntityOptions,
  GetAllOptions,
  KeyOwner,
  MemoryHistoryEntry,
  MemoryItem,
  MemoryPage,
  Message,
  RetiredList,
  RetiredMemory,
  RetiredOptions,
  SearchOptions,
  SearchResult,
  UpdateOptions,
  UpdateResult,
} from "./types.js";

export const DEFAULT_HOST = "http://127.0.0.1:8765";
const DEFAULT_TIMEOUT_MS = 30_000;

/** Where the server is and how to reach it. */
export interface MemoryConfig {
  /**
   * memhub serve's base URL (Mem0's `host`); unset: `MEMHUB_SERVER_URL` from the environment,
   * else `http://127.0.0.1:8765`.
   */
  host?: string;
  /**
   * A memhub key (`mhk_...` or an admin key), sent as `Authorization: Bearer <key>`; unset:
   * `MEMHUB_API_KEY` (or Mem0's `MEM0_API_KEY`) from the environment, as Mem0's client reads
   * its key.
   */
  apiKey?: string;
  /** Abort a request after this many milliseconds (default 30,000). */
  timeoutMs?: number;
  /** Another `fetch` (a proxy agent, instrumentation); default the global one. */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /**
   * The plan's and Mem0 OSS's provider sections. memhub's server owns its database,
   * embedder and LLM (its `MEMHUB_*` settings), so the client ignores these, with one
   * warning naming them; `vectorStore.provider` other than pgvector is refused.
   */
  provider?: string;
  vectorStore?: { provider?: string; config?: Record<string, unknown> };
  llm?: unknown;
  embedder?: unknown;
  historyStore?: unknown;
  historyDbPath?: string;
  disableHistory?: boolean;
  version?: string;
}

const SERVER_SIDE_SECTIONS = [
  "vectorStore",
  "llm",
  "embedder",
  "historyStore",
  "historyDbPath",
  "disableHistory",
] as const;
const STORES_MEMHUB_RUNS_ON = new Set(["pgvector", "postgres", "postgresql", "memhub"]);

let warnedSections = false;

function checkProviderSections(config: MemoryConfig): void {
  const store = config.vectorStore?.provider;
  if (store !== undefined && !STORES_MEMHUB_RUNS_ON.has(store.toLowerCase())) {
    throw new ConfigurationError(
      `vectorStore.provider "${store}": memhub stores memories in its server's PostgreSQL` +
        " with pgvector; drop the vectorStore section (or set it to pgvector) and point" +
        " host at memhub serve",
    );
  }
  const named = SERVER_SIDE_SECTIONS.filter((key) => config[key] !== undefined);
  if (named.length > 0 && !warnedSections) {
    warnedSections = true;
    console.warn(
      `memhub: ignoring ${named.join(", ")} in the Memory config: the memhub server's` +
        " MEMHUB_* settings choose its database, embedder and LLM (warned once)",
    );
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Query = Record<string, string | number | boolean | undefined>;

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
}

/** Top-level keys camelCased; `metadata` (the caller's own keys) untouched. */
function camelKeys<T>(value: unknown): T {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value as T;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[camel(key)] = inner;
  return out as T;
}

function iso(value: Date | string | number): string | number {
  return value instanceof Date ? value.toISOString() : value;
}

function scopeOf(options: EntityOptions): Query {
  return { user_id: options.userId, agent_id: options.agentId, run_id: options.runId };
}

const SCOPE_FILTER_KEYS: Readonly<Record<string, keyof EntityOptions>> = {
  user_id: "userId",
  agent_id: "agentId",
  run_id: "runId",
  userId: "userId",
  agentId: "agentId",
  runId: "runId",
};

/**
 * Mem0 v3 puts the scope inside `filters` (`{user_id: "alice"}`); memhub takes it as
 * parameters and refuses scope ids in a tenant's filters. Plain string ids move out.
 */
function liftScope(
  options: EntityOptions,
  filters: Record<string, unknown> | undefined,
): { scope: EntityOptions; rest: Record<string, unknown> | undefined } {
  const scope: EntityOptions = { ...pickScope(options) };
  if (filters === undefined) return { scope, rest: undefined };
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(filters)) {
    const field = SCOPE_FILTER_KEYS[key];
    if (field === undefined || typeof value !== "string") {
      rest[key] = value;
      continue;
    }
    const given = scope[field];
    if (given !== undefined && given !== value) {
      throw new ValidationError(`filters.${key} "${value}" contradicts ${field} "${given}"`);
    }
    scope[field] = value;
  }
  return { scope, rest: Object.keys(rest).length > 0 ? rest : undefined };
}

function pickScope(options: EntityOptions): EntityOptions {
  const scope: EntityOptions = {};
  if (options.userId !== undefined) scope.userId = options.userId;
  if (options.agentId !== undefined) scope.agentId = options.agentId;
  if (options.runId !== undefined) scope.runId = options.runId;
  return scope;
}

const ENTITY_KEYS = ["userId", "agentId", "runId"];
const KNOWN_OPTIONS: Readonly<Record<string, ReadonlySet<string>>> = {
  add: new Set([
    ...ENTITY_KEYS,
    "metadata",
    "infer",
    "timestamp",
    "wait",
    "idempotencyKey",
    "expirationDate",
  ]),
  search: new Set([
    ...ENTITY_KEYS,
    "limit",
    "topK",
    "filters",
    "threshold",
    "includeSuperseded",
    "asOf",
    "includeMetadata",
  ]),
  getAll: new Set([
    ...ENTITY_KEYS,
    "limit",
    "topK",
    "pageSize",
    "cursor",
    "includeSuperseded",
    "filters",
  ]),
  update: new Set(["text", "data", "metadata", "replaceMetadata"]),
  retired: new Set([...ENTITY_KEYS, "limit"]),
  scope: new Set(ENTITY_KEYS),
};

/** Options this client does not support (Mem0's `rerank`, `customInstructions`...) are refused,
 * never dropped on the way: a caller without the types would otherwise not know. */
function checkOptions(method: string, kind: string, options: object): void {
  const known = KNOWN_OPTIONS[kind] as ReadonlySet<string>;
  const unknown = Object.keys(options).filter(
    (key) => !known.has(key) && (options as Record<string, unknown>)[key] !== undefined,
  );
  if (unknown.length > 0) {
    throw new ValidationError(
      `${method}() does not support ${unknown.join(", ")} (memhub's TypeScript client;` +
        " see docs/typescript.md for what differs from Mem0)",
    );
  }
}

function dropUndefined(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined));
}

/** A memhub server, spoken to in Mem0's TypeScript shapes. */
export class Memory {
  readonly host: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly extraHeaders: Record<string, string>;
  /** The causal tokens of this object's recent adds, with their scopes: a search of a scope
   * that sees them passes them back, so the server waits for this object's own writes only. */
  private unsettled: { scope: Query; token: string }[] = [];

  constructor(config: MemoryConfig = {}) {
    checkProviderSections(config);
    const env = typeof process === "undefined" ? {} : process.env;
    const fromEnv = env["MEMHUB_SERVER_URL"] || env["MEMHUB_URL"] || DEFAULT_HOST;
    const host = (config.host ?? fromEnv).replace(/\/+$/, "");
    try {
      new URL(host);
    } catch (error) {
      throw new ConfigurationError(`host "${host}" is not a URL`, { cause: error });
    }
    const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(timeoutMs > 0)) throw new ConfigurationError(`timeoutMs must be positive: ${timeoutMs}`);
    this.host = host;
    this.apiKey = config.apiKey ?? (env["MEMHUB_API_KEY"] || env["MEM0_API_KEY"] || undefined);
    this.timeoutMs = timeoutMs;
    this.fetchImpl = config.fetch ?? globalThis.fetch;
    this.extraHeaders = { ...config.headers };
  }

  /** Store messages; with `wait: true` answer once they are searchable. */
  async add(messages: string | Message | Message[], options: AddOptions = {}): Promise<AddResult> {
    checkOptions("add", "add", options);
    const body = dropUndefined({
      messages,
      ...scopeOf(options),
      metadata: options.metadata,
      infer: options.infer,
      timestamp: options.timestamp === undefined ? undefined : iso(options.timestamp),
      wait: options.wait,
      expiration_date:
        options.expirationDate === undefined ? undefined : iso(options.expirationDate),
    });
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers["Idempotency-Key"] = options.idempotencyKey;
    const answer = await this.request<Record<string, unknown>>("POST", "/v1/memories", {
      body,
      headers,
    });
    const result = camelKeys<AddResult>(answer);
    result.results = (Array.isArray(answer["results"]) ? answer["results"] : []).map((item) =>
      camelKeys(item),
    );
    const token = answer["causal_token"];
    if (typeof token === "string" && answer["status"] !== "DONE") {
      this.unsettled = [...this.unsettled, { scope: scopeOf(options), token }].slice(-16);
    }
    return result;
  }

  /** Memories relevant to `query`, best first, each with a `score` in [0, 1]. */
  async search(query: string, options: SearchOptions = {}): Promise<SearchResult> {
    checkOptions("search", "search", options);
    const { scope, rest } = liftScope(options, options.filters);
    const body = dropUndefined({
      query,
      ...scopeOf(scope),
      limit: options.limit ?? options.topK,
      filters: rest,
      threshold: options.threshold,
      include_superseded: options.includeSuperseded,
      as_of: options.asOf === undefined ? undefined : iso(options.asOf),
    });
    // Read your own writes: the tokens of this object's adds that the searched scope sees.
    const wanted = Object.entries(scopeOf(scope)).filter(([, value]) => value !== undefined);
    const seen = this.unsettled.filter((w) =>
      wanted.every(([key, value]) => w.scope[key] === value),
    );
    if (seen.length > 0) body["causal_tokens"] = seen.map((w) => w.token);
    const answer = await this.request<{ results?: unknown[] }>("POST", "/v1/memories/search", {
      body,
    });
    this.unsettled = this.unsettled.filter((w) => !seen.includes(w)); // waited for once
    return { results: (answer.results ?? []).map((item) => camelKeys<MemoryItem>(item)) };
  }

  /** One memory by id, or null when the caller's scope has no such memory (as Mem0 OSS). */
  async get(memoryId: string, options: EntityOptions = {}): Promise<MemoryItem | null> {
    checkOptions("get", "scope", options);
    try {
      const answer = await this.request<unknown>("GET", this.byId(memoryId), {
        query: scopeOf(options),
      });
      return camelKeys<MemoryItem>(answer);
    } catch (error) {
      if (error instanceof MemoryNotFoundError && error.type === "MemoryNotFound") return null;
      throw error;
    }
  }

  /** One page of the scope's memories, newest first; follow `nextCursor` for the next. */
  async getAll(options: GetAllOptions = {}): Promise<MemoryPage> {
    checkOptions("getAll", "getAll", options);
    const { scope, rest } = liftScope(options, options.filters);
    if (rest !== undefined) {
      throw new ValidationError(
        "getAll() filters may name only user_id, agent_id and run_id" +
          ` (got ${Object.keys(rest).join(", ")}); use search() for metadata filters`,
      );
    }
    const answer = await this.request<{ results?: unknown[]; next_cursor?: string }>(
      "GET",
      "/v1/memories",
      {
        query: {
          ...scopeOf(scope),
          limit: options.limit ?? options.topK ?? options.pageSize,
          cursor: options.cursor,
          include_superseded: options.includeSuperseded,
        },
      },
    );
    const page: MemoryPage = {
      results: (answer.results ?? []).map((item) => camelKeys<MemoryItem>(item)),
    };
    if (typeof answer.next_cursor === "string") page.nextCursor = answer.next_cursor;
    return page;
  }

  /**
   * Correct a memory's text and/or its metadata; the old text stays in its history.
   * `metadata` is merged into the stored keys unless `replaceMetadata` is set.
   */
  async update(memoryId: string, change: string | UpdateOptions): Promise<UpdateResult> {
    const options: UpdateOptions = typeof change === "string" ? { text: change } : change;
    checkOptions("update", "update", options);
    const text = options.text ?? options.data;
    if (text === undefined && options.metadata === undefined) {
      throw new ValidationError("update() needs text, metadata or both");
    }
    if (options.replaceMetadata && text === undefined) {
      throw new ValidationError("update() with replaceMetadata needs text (memhub's PUT)");
    }
    const answer = await this.request<{ message: string; result: unknown }>(
      options.replaceMetadata ? "PUT" : "PATCH",
      this.byId(memoryId),
      { body: dropUndefined({ text, metadata: options.metadata }) },
    );
    return { message: answer.message, result: camelKeys<MemoryItem>(answer.result) };
  }

  /** Delete one memory; its history keeps a DELETE event with the last text. */
  async delete(memoryId: string, options: EntityOptions = {}): Promise<DeleteResult> {
    checkOptions("delete", "scope", options);
    return this.request<DeleteResult>("DELETE", this.byId(memoryId), {
      query: scopeOf(options),
    });
  }

  /** Delete everything of a scope (at least one id is required, so this cannot wipe all). */
  async deleteAll(options: EntityOptions): Promise<DeleteAllResult> {
    checkOptions("deleteAll", "scope", options);
    return this.request<DeleteAllResult>("DELETE", "/v1/memories", { query: scopeOf(options) });
  }

  /** Every change of a memory, oldest first. */
  async history(memoryId: string, options: EntityOptions = {}): Promise<MemoryHistoryEntry[]> {
    checkOptions("history", "scope", options);
    const answer = await this.request<unknown[]>("GET", `${this.byId(memoryId)}/history`, {
      query: scopeOf(options),
    });
    return answer.map((entry) => camelKeys<MemoryHistoryEntry>(entry));
  }

  /**
   * Bring back a memory a model retired, or a superseded one in place of its successor (which
   * is retired); answers the restored memory. Throws {@link MemoryNotFoundError} for an unknown
   * id or another scope's or tenant's, {@link NotRestorableError} (409) for one that was erased,
   * is current, or whose text is current again.
   */
  async restore(memoryId: string, options: EntityOptions = {}): Promise<MemoryItem> {
    checkOptions("restore", "scope", options);
    const answer = await this.request<unknown>("POST", `${this.byId(memoryId)}/restore`, {
      query: scopeOf(options),
    });
    return camelKeys<MemoryItem>(answer);
  }

  /** The scope's retired memories (what a model removed), most recently retired first. */
  async retired(options: RetiredOptions): Promise<RetiredList> {
    checkOptions("retired", "retired", options);
    const answer = await this.request<{ results?: unknown[] }>("GET", "/v1/memories/retired", {
      query: { ...scopeOf(options), limit: options.limit },
    });
    return { results: (answer.results ?? []).map((item) => camelKeys<RetiredMemory>(item)) };
  }

  /** Who the key belongs to; throws {@link AuthenticationError} for a bad key. */
  async ping(): Promise<KeyOwner> {
    return camelKeys<KeyOwner>(await this.request<unknown>("GET", "/v1/me", {}));
  }

  private byId(memoryId: string): string {
    return `/v1/memories/${encodeURIComponent(memoryId)}`;
  }

  private async request<T>(
    method: string,
    path: string,
    options: { body?: Record<string, unknown>; query?: Query; headers?: Record<string, string> },
  ): Promise<T> {
    const url = new URL(this.host + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = {
      Accept: "application/json",
      ...this.extraHeaders,
      ...options.headers,
    };
    if (this.apiKey !== undefined) headers["Authorization"] = `Bearer ${this.apiKey}`;
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(options.body as Json);
    }
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method,
        headers,
        ...(payload === undefined ? {} : { body: payload }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const timedOut = error instanceof Error && error.name === "TimeoutError";
      throw new NetworkError(
        timedOut
          ? `${method} ${url.pathname}: no answer from ${this.host} within ${this.timeoutMs} ms`
          : `${method} ${url.pathname}: cannot reach ${this.host}: ${describe(error)}`,
        { cause: error },
      );
    }
    const text = await readText(response, method, url.pathname);
    if (!response.ok) {
      throw errorFromResponse(response.status, text, response.headers.get("Retry-After"));
    }
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new MemoryError(
        `${method} ${url.pathname}: the answer is not JSON: ${text.slice(0, 200)}`,
        {
          status: response.status,
          cause: error,
        },
      );
    }
  }
}

async function readText(response: Response, method: string, path: string): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new NetworkError(`${method} ${path}: the answer was cut off: ${describe(error)}`, {
      status: response.status,
      cause: error,
    });
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const code =
    typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined;
  return typeof code === "string" ? `${error.message} (${code})` : error.message;
}
