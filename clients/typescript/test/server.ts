/** A real `memhub serve` for the tests: its own data directory, a free port, an admin key. */

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ADMIN_KEY = "ts-client-test-admin-key-0123456789";

const here = fileURLToPath(new URL(".", import.meta.url)); // build/test/
const repoRoot = resolve(here, "..", "..", "..", "..");

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

export interface RunningServer {
  url: string;
  /** Stop the server (SIGTERM, then SIGKILL after 30 s) and remove its data directory. */
  stop(): Promise<void>;
  log(): string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/** The environment without the caller's memhub, Mem0 or OpenAI settings, so the server uses
 * only what the test gives it: its own embedded PostgreSQL, the default embedder, no LLM. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(MEMHUB_|MEM0_|OPENAI_)/.test(key) || key === "DB_URL") continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

export async function startServer(): Promise<RunningServer> {
  const binary = process.env["MEMHUB_BIN"] ?? join(repoRoot, ".venv", "bin", "memhub");
  if (!existsSync(binary)) {
    throw new Error(
      `${binary} not found: run the repository's \`make test\` (it builds .venv) or set MEMHUB_BIN`,
    );
  }
  const dataDir = mkdtempSync(join(tmpdir(), "memhub-ts-"));
  const logPath = join(dataDir, "serve.log");
  const port = await freePort();
  const out = openSync(logPath, "a");
  const child: ChildProcess = spawn(
    binary,
    ["serve", "--host", "127.0.0.1", "--port", String(port)],
    {
      env: cleanEnv({ MEMHUB_DATA_DIR: join(dataDir, "data"), MEMHUB_ADMIN_KEY: ADMIN_KEY }),
      stdio: ["ignore", out, out],
    },
  );
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill); // a crashed test run leaves no server behind
  const log = () => (existsSync(logPath) ? readFileSync(logPath, "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`memhub serve exited with ${child.exitCode}:\n${log()}`);
    try {
      const answer = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (answer.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      kill();
      throw new Error(`memhub serve never became healthy:\n${log()}`);
    }
    await sleep(200);
  }
  return {
    url,
    log,
    async stop() {
      process.removeListener("exit", kill);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((done) => child.once("exit", () => done()));
        child.kill("SIGTERM");
        const timer = setTimeout(kill, 30_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A tenant key made with the admin key (`POST /v1/keys`). */
export async function tenantKey(url: string, tenant: string): Promise<string> {
  const answer = await fetch(`${url}/v1/keys`, {
    method: "POST",
    headers: { Authorization: `Bearer ${ADMIN_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name: `ts ${tenant}`, tenant }),
  });
  if (answer.status !== 201)
    throw new Error(`creating a key: ${answer.status} ${await answer.text()}`);
  return ((await answer.json()) as { key: string }).key;
}

/** `check()` until it returns a value (not undefined), or fail after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
