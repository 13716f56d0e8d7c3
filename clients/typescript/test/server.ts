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
  /** The server's MEMHUB_DATA_DIR (its embedded PostgreSQL), for another memhub process. */
  dataDir: string;
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

function memhubBinary(): string {
  return process.env["MEMHUB_BIN"] ?? join(repoRoot, ".venv", "bin", "memhub");
}

export async function startServer(): Promise<RunningServer> {
  const binary = memhubBinary();
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
    dataDir: join(dataDir, "data"),
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

/**
 * Retire a memory the way a model does, since REST has no retire route: `memhub mcp` (stdio,
 * pinned to `userId`, attached to the server's embedded PostgreSQL) is sent MCP's
 * `delete_memory` with the user's request to forget it. Answers the tool's result.
 * `userId` is the stored id: a tenant key's `alice` is `<tenant>:alice`.
 */
export async function retireViaMcp(
  dataDir: string,
  userId: string,
  memoryId: string,
  userRequest: string,
): Promise<Record<string, unknown>> {
  const child = spawn(memhubBinary(), ["mcp", "--user-id", userId], {
    env: cleanEnv({ MEMHUB_DATA_DIR: dataDir }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const answers = new Map<number, (message: Record<string, unknown>) => void>();
  let buffered = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line === "") continue;
      const message = JSON.parse(line) as Record<string, unknown>;
      if (typeof message["id"] === "number") answers.get(message["id"])?.(message);
    }
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const send = (message: object) => child.stdin.write(JSON.stringify(message) + "\n");
  const call = (id: number, method: string, params: object) =>
    new Promise<Record<string, unknown>>((done, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`memhub mcp: no answer to ${method}:\n${stderr}`)),
        60_000,
      );
      answers.set(id, (message) => {
        clearTimeout(timer);
        done(message);
      });
      send({ jsonrpc: "2.0", id, method, params });
    });
  try {
    await call(1, "initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "memhub-ts-tests", version: "0" },
    });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const answer = await call(2, "tools/call", {
      name: "delete_memory",
      arguments: { memory_id: memoryId, user_request: userRequest },
    });
    const result = answer["result"] as Record<string, unknown> | undefined;
    if (result === undefined || result["isError"] === true)
      throw new Error(`delete_memory failed: ${JSON.stringify(answer)}\n${stderr}`);
    return result["structuredContent"] as Record<string, unknown>;
  } finally {
    child.stdin.end(); // stdio servers stop when their input closes
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }
}
