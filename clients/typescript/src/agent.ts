/**
 * The plan's agent-level memory plumbing: recall before the model call, one synthetic system
 * message, persist after. Memory is an aid: when it is off, unresolved, or failing, the call
 * goes on without it and the model's answer is returned as usual.
 */

import { Memory, type MemoryConfig } from "./memory.js";
import { RuntimeStore, registerRuntimeResource, type RuntimeState } from "./runtime.js";
import type { AddResult, MemoryItem, Message } from "./types.js";
import {
  buildMem0ConfigFromEnv,
  contentText,
  injectMemories,
  isMemoryBlock,
  memoryEnabledFromEnv,
} from "./utils.js";

/** One agent call as resolvers see it. */
export interface AgentCallContext {
  agentName: string;
  threadId?: string;
  /** `any` values so the plan's `async (_runtime, { metadata }) => metadata?.userId`
   * type-checks as written. */
  metadata: Record<string, any>;
  messages: readonly Message[];
}

/** `resolver(runtime, call)`, sync or async: an id, or undefined to skip memory. */
export type Resolver<State extends RuntimeState> = (
  runtime: RuntimeStore<State>,
  call: AgentCallContext,
) => string | undefined | null | Promise<string | undefined | null>;

/** What the helper needs of a memory client; {@link Memory} is one. */
export type MemoryClientLike = Pick<Memory, "search" | "add">;

export type MemoryOperation = "enable" | "resolve" | "load" | "recall" | "persist";

export interface AgentMemoryConfig<State extends RuntimeState = RuntimeState> {
  /** Use memory at all (`MEMHUB_MEMORY_ENABLED=false` / `MEM0_ENABLED=false` override it). */
  enable: boolean;
  /** Whose memory; default `metadata.userId` (or `user_id`), else `runtime.state.userId`. */
  resolveUser?: Resolver<State>;
  /** Which conversation; default the call's `threadId`, else `metadata.threadId`. */
  resolveThreadId?: Resolver<State>;
  /** A client to use as it is. */
  client?: MemoryClientLike;
  /** Without `client`: the config of a {@link Memory} loaded (once per runtime) as the
   * `"mem0"` resource; default {@link buildMem0ConfigFromEnv}. */
  providerConfig?: MemoryConfig;
  /** Memories injected at most per call (default 8). */
  recallLimit?: number;
  /** Drop hits scoring below this (0-1). */
  recallThreshold?: number;
  /** Whose messages of the exchange are persisted (default both). A server without an LLM
   * keeps every message as a memory, so `["user"]` keeps the agent's replies out of recall. */
  persistRoles?: ReadonlyArray<"user" | "assistant">;
  /** Stored in the metadata of everything this agent persists. */
  tags?: readonly string[];
  /** Let the server's LLM extract facts from the persisted exchange (default true). */
  infer?: boolean;
  /** Where warnings go (default `console`). */
  logger?: { warn(message: string): void };
  /** Told of every memory failure (telemetry); the call goes on either way. */
  onError?: (operation: MemoryOperation, error: unknown) => void;
}

/** What a model gives back: the answer, or its text chunk by chunk (for `stream`). */
export type ModelAnswer = string | { text: string } | AsyncIterable<string>;

/** The caller's model: the prompt in, the answer out. */
export type ModelFunction = (
  messages: Message[],
  context: { agentName: string; threadId?: string },
) => Promise<ModelAnswer> | ModelAnswer;

export interface MemoryOutcome {
  /** Memory ran for this call (enabled, user and thread resolved, client loaded). */
  used: boolean;
  skipped?: "disabled" | "no-user" | "no-thread" | "unavailable";
  userId?: string;
  threadId?: string;
  /** What was injected. */
  recalled: MemoryItem[];
  /** The server acknowledged the exchange (it is durable). */
  persisted: boolean;
  addResult?: AddResult;
  errors: Array<{ operation: MemoryOperation; error: unknown }>;
}

export interface GenerateResult {
  text: string;
  /** The prompt the model was given (instructions, memory block, conversation). */
  prompt: Message[];
  memory: MemoryOutcome;
}

export interface GenerateOptions<State extends RuntimeState = RuntimeState> {
  runtime?: RuntimeStore<State>;
  threadId?: string;
  messages: readonly Message[];
  metadata?: Record<string, unknown>;
}

const RECALL_QUERY_CHARS = 4000; // the server's embedder reads a few hundred tokens at most

/** The plan's `createMem0Memory`: a {@link Memory} from `config` or the environment. */
export function createMem0Memory(config?: MemoryConfig): Memory {
  return new Memory(config ?? buildMem0ConfigFromEnv());
}

/** Register the `"mem0"` runtime resource (done on import; call again after replacing it). */
export function registerMem0RuntimeResource(): void {
  registerRuntimeResource("mem0", (_runtime, config) =>
    createMem0Memory(config as MemoryConfig | undefined),
  );
}
registerMem0RuntimeResource();

function text(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const out = String(value).trim();
  return out === "" ? undefined : out;
}

function defaultResolveUser(runtime: RuntimeStore<RuntimeState>, call: AgentCallContext) {
  return text(call.metadata["userId"] ?? call.metadata["user_id"] ?? runtime.state["userId"]);
}

function defaultResolveThreadId(_runtime: RuntimeStore<RuntimeState>, call: AgentCallContext) {
  return text(call.threadId ?? call.metadata["threadId"] ?? call.metadata["thread_id"]);
}

/** The messages of this call's turn: the user messages after the last assistant message. */
export function newTurn(messages: readonly Message[]): Message[] {
  let start = 0;
  messages.forEach((message, index) => {
    if (message.role === "assistant") start = index + 1;
  });
  return messages.slice(start).filter((m) => m.role === "user" && contentText(m).trim() !== "");
}

// Warnings that would repeat on every call are given once per config (so once per agent).
const warned = new WeakMap<object, Set<string>>();

function warnOnce(config: AgentMemoryConfig<never>, key: string, message: string): void {
  let keys = warned.get(config);
  if (keys === undefined) warned.set(config, (keys = new Set()));
  if (keys.has(key)) return;
  keys.add(key);
  warn(config, message);
}

/** A warning through the config's logger; a logger that throws costs the line, not the call. */
function warn(config: AgentMemoryConfig<never>, message: string): void {
  try {
    (config.logger ?? console).warn(message);
  } catch {
    // nothing better to do with a broken logger
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

class MemoryCall<State extends RuntimeState> {
  readonly outcome: MemoryOutcome = { used: false, recalled: [], persisted: false, errors: [] };
  private client: MemoryClientLike | undefined;

  constructor(
    private readonly config: AgentMemoryConfig<State> | undefined,
    private readonly runtime: RuntimeStore<State>,
    private readonly call: AgentCallContext,
  ) {}

  private failed(operation: MemoryOperation, error: unknown): void {
    this.outcome.errors.push({ operation, error });
    const config = this.config as AgentMemoryConfig<State>;
    warn(
      config as AgentMemoryConfig<never>,
      `memhub: agent ${this.call.agentName}: memory ${operation} failed,` +
        ` continuing without it: ${describe(error)}`,
    );
    try {
      config.onError?.(operation, error);
    } catch {
      // a broken telemetry hook must not fail the call either
    }
  }

  /** Resolve the scope and the client; false means this call runs without memory. */
  async open(): Promise<boolean> {
    const config = this.config;
    if (config === undefined) return this.skip("disabled");
    let enabled: boolean;
    try {
      enabled = config.enable && memoryEnabledFromEnv();
    } catch (error) {
      this.failed("enable", error); // an unreadable kill switch: fail safe, memory off
      return this.skip("disabled");
    }
    if (!enabled) return this.skip("disabled");
    const runtime = this.runtime as unknown as RuntimeStore<RuntimeState>;
    try {
      const user = config.resolveUser
        ? text(await config.resolveUser(this.runtime, this.call))
        : defaultResolveUser(runtime, this.call);
      const thread = config.resolveThreadId
        ? text(await config.resolveThreadId(this.runtime, this.call))
        : defaultResolveThreadId(runtime, this.call);
      if (user !== undefined) this.outcome.userId = user;
      if (thread !== undefined) this.outcome.threadId = thread;
    } catch (error) {
      this.failed("resolve", error); // the application's resolver threw
      return this.skip("unavailable");
    }
    const missing =
      this.outcome.threadId === undefined
        ? "thread id"
        : this.outcome.userId === undefined
          ? "user"
          : undefined;
    if (missing !== undefined) {
      warnOnce(
        config,
        missing,
        `memhub: agent ${this.call.agentName}: no ${missing} resolved, so this call runs` +
          " without memory (warned once per agent)",
      );
      return this.skip(missing === "user" ? "no-user" : "no-thread");
    }
    try {
      this.client =
        config.client ?? (await this.runtime.load<Memory>("mem0", config.providerConfig));
    } catch (error) {
      this.failed("load", error);
      return this.skip("unavailable");
    }
    this.outcome.used = true;
    return true;
  }

  private skip(reason: NonNullable<MemoryOutcome["skipped"]>): false {
    this.outcome.skipped = reason;
    return false;
  }

  async recall(): Promise<MemoryItem[]> {
    const config = this.config as AgentMemoryConfig<State>;
    const query = newTurn(this.call.messages)
      .map((m) => contentText(m).trim())
      .join("\n")
      .slice(-RECALL_QUERY_CHARS);
    if (this.client === undefined || query === "") return [];
    try {
      const found = await this.client.search(query, {
        userId: this.outcome.userId as string,
        limit: config.recallLimit ?? 8,
        ...(config.recallThreshold === undefined ? {} : { threshold: config.recallThreshold }),
      });
      this.outcome.recalled = found.results;
    } catch (error) {
      this.failed("recall", error);
    }
    return this.outcome.recalled;
  }

  async persist(answer: string, partial: boolean): Promise<void> {
    const config = this.config as AgentMemoryConfig<State>;
    const roles = config.persistRoles ?? ["user", "assistant"];
    const said: Message[] = [];
    if (roles.includes("user")) {
      for (const m of newTurn(this.call.messages))
        said.push({ role: "user", content: contentText(m) });
    }
    if (roles.includes("assistant") && answer.trim() !== "") {
      said.push({ role: "assistant", content: answer.trim() });
    }
    if (this.client === undefined || said.length === 0) return;
    const threadId = this.outcome.threadId as string;
    const metadata: Record<string, unknown> = { threadId, agent: this.call.agentName };
    if (partial) metadata["partial"] = true; // the caller stopped reading the stream early
    if (config.tags !== undefined) metadata["tags"] = [...config.tags];
    try {
      this.outcome.addResult = await this.client.add(said, {
        userId: this.outcome.userId as string,
        runId: threadId,
        metadata,
        infer: config.infer ?? true,
      });
      this.outcome.persisted = true;
    } catch (error) {
      this.failed("persist", error);
    }
  }
}

interface CallArgs<State extends RuntimeState> {
  model: ModelFunction;
  messages: readonly Message[];
  memory?: AgentMemoryConfig<State> | undefined;
  runtime?: RuntimeStore<State> | undefined;
  agentName?: string;
  instructions?: string;
  threadId?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

function isStream(answer: ModelAnswer): answer is AsyncIterable<string> {
  return typeof answer === "object" && answer !== null && Symbol.asyncIterator in answer;
}

/**
 * The shared path of `generate` and `stream`: recall and inject, then `answer(prompt)`
 * produces the text (yielding chunks when streaming), then the exchange is persisted, also
 * when the caller stopped reading early (marked `partial`). The runtime is cleaned up when
 * the call brought none.
 */
async function* callWithMemory<State extends RuntimeState>(
  args: CallArgs<State>,
  stopped: { result?: GenerateResult } = {},
): AsyncGenerator<string, GenerateResult, undefined> {
  const runtime = args.runtime ?? new RuntimeStore<State>();
  const agentName = args.agentName ?? "agent";
  const call: AgentCallContext = {
    agentName,
    metadata: args.metadata ?? {},
    messages: args.messages,
  };
  if (args.threadId !== undefined) call.threadId = args.threadId;
  const memory = new MemoryCall(args.memory, runtime, call);
  let said = "";
  let finished = false;
  let answered = false; // the model was called and gave an answer (or a stream) back
  let failed = false;
  let prompt: Message[] = [];
  try {
    const conversation: Message[] = [...args.messages];
    if (args.instructions !== undefined && args.instructions !== "") {
      conversation.unshift({ role: "system", content: args.instructions });
    }
    prompt = conversation.filter((m) => !isMemoryBlock(m));
    if (await memory.open()) {
      prompt = injectMemories(conversation, await memory.recall(), memory.outcome.threadId);
    }
    const context: { agentName: string; threadId?: string } = { agentName };
    const thread = memory.outcome.threadId ?? args.threadId;
    if (thread !== undefined) context.threadId = thread;
    const answer = await args.model(prompt, context);
    answered = true;
    if (isStream(answer)) {
      for await (const chunk of answer) {
        said += chunk;
        yield chunk;
      }
    } else {
      said = typeof answer === "string" ? answer : answer.text;
      yield said;
    }
    finished = true;
    if (memory.outcome.used) await memory.persist(said, false);
    return { text: said, prompt, memory: memory.outcome };
  } catch (error) {
    failed = true; // memory failures are caught where they happen: this is the model's
    throw error;
  } finally {
    // Reached without `finished` when the caller broke out of the stream: keep what was said.
    if (answered && !finished && !failed) {
      if (memory.outcome.used && said !== "") await memory.persist(said, true);
      stopped.result = { text: said, prompt, memory: memory.outcome };
    }
    if (args.runtime === undefined) await runtime.cleanup();
  }
}

/**
 * One model call with memory around it, for an agent loop of your own (AI Kit's
 * `Agent.generate`): recall, inject one system message, call `model`, persist the exchange.
 * Memory failures are logged and reported in `memory.errors`; only `model`'s own errors
 * reject. A model answering chunk by chunk is read to the end.
 */
export async function generateWithMemory<State extends RuntimeState = RuntimeState>(
  args: CallArgs<State>,
): Promise<GenerateResult> {
  const steps = callWithMemory(args);
  for (;;) {
    const step = await steps.next();
    if (step.done) return step.value;
  }
}

/** The chunks of a streamed answer; `result` settles once the exchange is persisted (after a
 * `break`, with the text said so far). */
export interface MemoryStream extends AsyncIterable<string> {
  readonly result: Promise<GenerateResult>;
}

/**
 * `generateWithMemory`, chunk by chunk (AI Kit's `Agent.stream`). Iterate it for the text;
 * await `result` for the prompt and the memory outcome. Breaking out early persists what was
 * said so far, with `metadata.partial: true`.
 */
export function streamWithMemory<State extends RuntimeState = RuntimeState>(
  args: CallArgs<State>,
): MemoryStream {
  const stopped: { result?: GenerateResult } = {};
  const steps = callWithMemory(args, stopped);
  let settle!: (value: GenerateResult) => void;
  let fail!: (error: unknown) => void;
  const result = new Promise<GenerateResult>((done, failed) => {
    settle = done;
    fail = failed;
  });
  result.catch(() => undefined); // a caller reading only the chunks gets the error there
  let started = false;
  return {
    result,
    [Symbol.asyncIterator](): AsyncIterator<string> {
      if (started) throw new Error("a memory stream can be read once");
      started = true;
      return {
        async next() {
          try {
            const step = await steps.next();
            if (!step.done) return { done: false, value: step.value };
            settle(step.value);
            return { done: true, value: undefined };
          } catch (error) {
            fail(error);
            throw error;
          }
        },
        async return() {
          try {
            await steps.return(undefined as never);
            if (stopped.result !== undefined) settle(stopped.result);
            else fail(new Error("the stream was closed before the model was called"));
          } catch (error) {
            fail(error);
          }
          return { done: true, value: undefined };
        },
      };
    },
  };
}

export interface AgentConfig<State extends RuntimeState = RuntimeState> {
  name: string;
  instructions?: string;
  model: ModelFunction;
  memory?: AgentMemoryConfig<State>;
}

/** The plan's `Agent`, reduced to what memory needs: `generate` with memory around it. */
export class Agent<State extends RuntimeState = RuntimeState> {
  readonly name: string;
  readonly instructions: string | undefined;
  readonly model: ModelFunction;
  readonly memory: AgentMemoryConfig<State> | undefined;

  constructor(config: AgentConfig<State>) {
    const limit = config.memory?.recallLimit;
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1)) {
      throw new RangeError(`recallLimit must be a whole number of at least 1, got ${limit}`);
    }
    this.name = config.name;
    this.instructions = config.instructions;
    this.model = config.model;
    this.memory = config.memory;
  }

  /** Answer `messages`: memories recalled before the model call, the exchange persisted after. */
  generate(options: GenerateOptions<State>): Promise<GenerateResult> {
    return generateWithMemory<State>(this.args(options));
  }

  /** `generate`, chunk by chunk: iterate for the text, await `result` for the outcome. */
  stream(options: GenerateOptions<State>): MemoryStream {
    return streamWithMemory<State>(this.args(options));
  }

  private args(options: GenerateOptions<State>): CallArgs<State> {
    return {
      model: this.model,
      messages: options.messages,
      memory: this.memory,
      runtime: options.runtime,
      agentName: this.name,
      ...(this.instructions === undefined ? {} : { instructions: this.instructions }),
      threadId: options.threadId,
      metadata: options.metadata,
    };
  }
}
