/**
 * docs/typescript.md's examples, run as written against the test's server: each ```ts block
 * is transpiled, its import pointed at this build, and its `console.log` output compared
 * with what the page says it prints.
 */

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { format } from "node:util";
import { after, describe, it, type TestContext } from "node:test";

import ts from "typescript";

import type { ServerContext } from "./memory.js";
import { tenantKey } from "./server.js";
import { Memory } from "../src/index.js";

const here = fileURLToPath(new URL(".", import.meta.url)); // build/test/
const page = resolve(here, "..", "..", "..", "..", "docs", "typescript.md");
const built = pathToFileURL(resolve(here, "..", "src", "index.js")).href;

function examples(): string[] {
  const text = readFileSync(page, "utf8");
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);
}

/** What each `console.log(...); // comment` line of `source` says it prints, in order. */
function promised(source: string): string[] {
  return [...source.matchAll(/console\.log\(.*\);\s*\/\/ (.*)$/gm)].map((m) => m[1] as string);
}

function matches(printed: string, said: string): boolean {
  // "0.27..." in a comment stands for a longer number: a prefix
  return said.endsWith("...") ? printed.startsWith(said.slice(0, -3)) : printed === said;
}

export function docsSuite(ctx: ServerContext): void {
  describe("docs/typescript.md examples", () => {
    const dir = mkdtempSync(join(tmpdir(), "memhub-ts-docs-"));
    let runs = 0;
    after(() => rmSync(dir, { recursive: true, force: true }));

    async function run(t: TestContext, source: string, host: string): Promise<string[]> {
      const js = ts
        .transpileModule(source, {
          compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
        })
        .outputText.replaceAll('"@memhub/client"', JSON.stringify(built))
        .replaceAll('"http://127.0.0.1:8765"', JSON.stringify(host));
      const file = join(dir, `example-${++runs}.mjs`);
      writeFileSync(file, js);
      const printed: string[] = [];
      const log = t.mock.method(console, "log", (...args: unknown[]) => {
        printed.push(format(...args));
      });
      try {
        await import(pathToFileURL(file).href);
      } finally {
        log.mock.restore();
      }
      return printed;
    }

    async function withEnv<T>(values: Record<string, string>, body: () => Promise<T>): Promise<T> {
      const saved = Object.fromEntries(Object.keys(values).map((k) => [k, process.env[k]]));
      Object.assign(process.env, values);
      try {
        return await body();
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      }
    }

    it("the Memory example prints what the page says", async (t) => {
      const [source] = examples();
      assert.ok(source !== undefined);
      const key = await tenantKey(ctx.url, "docs");
      const printed = await withEnv({ MEMHUB_API_KEY: key }, () => run(t, source, ctx.url));
      const said = promised(source);
      assert.equal(said.length, 5);
      assert.equal(printed.length, said.length, printed.join("\n"));
      said.forEach((line, i) => {
        assert.ok(matches(printed[i] ?? "", line), `printed ${printed[i]}, the page says ${line}`);
      });
    });

    it("the plan's agent example, run twice, recalls the first call in the second", async (t) => {
      const source = examples()[1];
      assert.ok(source !== undefined);
      const key = await tenantKey(ctx.url, "docs");
      const env = { MEMHUB_SERVER_URL: ctx.url, MEMHUB_API_KEY: key };
      const first = await withEnv(env, () => run(t, source, ctx.url));
      assert.equal(first.at(-1), "Let me reset your password. 0 true");
      assert.doesNotMatch(first.join("\n"), /memhub:memories/);
      const memory = new Memory({ host: ctx.url, apiKey: key });
      const page = await memory.getAll({ userId: "customer-42", runId: "ticket-1876" });
      assert.equal(page.results.length, 2); // stored before the first call returned
      // The second run is another process: its search waits for nobody's writes but its own
      // (docs/api.md, read-your-writes per caller), so wait until both are found by meaning.
      await untilFound(memory, "Let me reset your password.", 2);
      const second = await withEnv(env, () => run(t, source, ctx.url));
      assert.equal(second.at(-1), "Let me reset your password. 2 true");
      assert.match(second[0] ?? "", /system: <memhub:memories thread="ticket-1876">/);
    });
  });
}

/** Poll until a search of the example's thread returns ``count`` memories (an event, not a
 * time: at most 600 tries, 50 ms apart). */
async function untilFound(memory: Memory, query: string, count: number): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const found = await memory.search(query, { userId: "customer-42", runId: "ticket-1876" });
    if (found.results.length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`fewer than ${count} memories found by meaning`);
}
