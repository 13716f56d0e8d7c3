/**
 * The plan's runtime: scoped state, lazily built and cached resources, cleanup hooks.
 *
 * A memory client loaded through a runtime is built once, shared by every agent call made
 * with that runtime, and its cleanup hooks run once, when `cleanup()` is called.
 */

export type RuntimeState = Record<string, unknown>;

/** Builds a resource for `runtime.load(name, config)`. */
export type ResourceFactory<T = unknown> = (
  runtime: RuntimeStore<RuntimeState>,
  config: unknown,
) => T | Promise<T>;

const registry = new Map<string, ResourceFactory>();

/** Make `runtime.load(name, config)` build `name` with `factory` in every runtime. */
export function registerRuntimeResource(name: string, factory: ResourceFactory): void {
  registry.set(name, factory);
}

function configKey(config: unknown): string {
  try {
    return JSON.stringify(config ?? null, (_key, value: unknown) =>
      typeof value === "function" ? `[function ${value.name}]` : value,
    );
  } catch {
    return `unserialisable:${String(config)}`;
  }
}

export class RuntimeStore<State extends RuntimeState = RuntimeState> {
  /** Application values (the current user, a request id...) resolvers can read. */
  readonly state: State;
  private readonly factories = new Map<string, ResourceFactory>();
  private readonly resources = new Map<string, Promise<unknown>>();
  private readonly hooks: Array<() => unknown> = [];
  private closed = false;

  constructor(state?: State) {
    this.state = (state ?? {}) as State;
  }

  /** Build `name` with `factory` in this runtime (overrides the global registry). */
  registerResource(name: string, factory: ResourceFactory): void {
    this.factories.set(name, factory);
  }

  /**
   * The resource `name` for `config`, built on first use and then cached: loading the same
   * name with an equal (JSON-equal) config returns the same object. A failed build is not
   * cached, so the next call tries again.
   */
  async load<T = unknown>(name: string, config?: unknown): Promise<T> {
    if (this.closed) throw new Error(`runtime already cleaned up; cannot load "${name}"`);
    const key = `${name}\u0000${configKey(config)}`;
    let pending = this.resources.get(key);
    if (pending === undefined) {
      const factory = this.factories.get(name) ?? registry.get(name);
      if (factory === undefined) throw new Error(`no runtime resource named "${name}"`);
      pending = Promise.resolve().then(() =>
        factory(this as unknown as RuntimeStore<RuntimeState>, config),
      );
      this.resources.set(key, pending);
      pending.catch(() => this.resources.delete(key));
    }
    return (await pending) as T;
  }

  /** Run `hook` at cleanup (hooks run last-registered first). */
  onCleanup(hook: () => unknown): void {
    this.hooks.push(hook);
  }

  /** Run the cleanup hooks once; later calls do nothing. A failing hook does not stop the
   * others; the first failure is thrown after all ran. */
  async cleanup(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let first: unknown;
    for (const hook of this.hooks.reverse()) {
      try {
        await hook();
      } catch (error) {
        first ??= error;
      }
    }
    this.resources.clear();
    if (first !== undefined) throw first;
  }
}

export function createRuntime<State extends RuntimeState = RuntimeState>(
  state?: State,
): RuntimeStore<State> {
  return new RuntimeStore<State>(state);
}
