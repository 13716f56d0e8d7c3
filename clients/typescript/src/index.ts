/** memhub's TypeScript client: a Mem0-shaped `Memory` over `memhub serve`, and the
 * agent-level memory plumbing of the AI Kit integration plan. No runtime dependencies. */

export * from "./errors.js";
export * from "./types.js";
export { DEFAULT_HOST, Memory, type MemoryConfig } from "./memory.js";
export {
  RuntimeStore,
  createRuntime,
  registerRuntimeResource,
  type ResourceFactory,
  type RuntimeState,
} from "./runtime.js";
export {
  MEMORY_BLOCK_CLOSE,
  MEMORY_BLOCK_OPEN,
  buildMem0ConfigFromEnv,
  formatConversationForMem0,
  formatMemories,
  injectMemories,
  isMemoryBlock,
  memoryEnabledFromEnv,
  type ConversationPayload,
  type Env,
  type EnvMemoryConfig,
} from "./utils.js";
export {
  Agent,
  createMem0Memory,
  generateWithMemory,
  streamWithMemory,
  newTurn,
  registerMem0RuntimeResource,
  type AgentCallContext,
  type AgentConfig,
  type AgentMemoryConfig,
  type GenerateOptions,
  type GenerateResult,
  type MemoryClientLike,
  type MemoryOperation,
  type MemoryOutcome,
  type ModelAnswer,
  type ModelFunction,
  type MemoryStream,
  type Resolver,
} from "./agent.js";
