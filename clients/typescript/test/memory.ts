/** `Memory` against a real `memhub serve`: every method, and errors mapped by status. */

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { describe, it } from "node:test";

import {
  AuthenticationError,
  ConfigurationError,
  ConflictError,
  Memory,
  MemoryError,
  MemoryNotFoundError,
  MemoryQuotaExceededError,
  NetworkError,
  NotRestorableError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  ValidationError,
  errorFromResponse,
} from "../src/index.js";
import { freePort, retireViaMcp, tenantKey } from "./server.js";

export interface ServerContext {
  url: string;
  /** The server's MEMHUB_DATA_DIR, for a `memhub mcp` beside it. */
  dataDir: string;
}

export function memorySuite(ctx: ServerContext): void {
  describe("Memory", () => {
    let memory: Memory;
    let parisId: string;

    it("ping names the key's tenant", async () => {
      memory = new Memory({ host: ctx.url, apiKey: await tenantKey(ctx.url, "acme") });
      const owner = await memory.ping();
      assert.equal(owner.tenant, "acme");
      assert.equal(owner.isAdmin, false);
    });

    it("add with wait answers the stored memories, camelCased, metadata verbatim", async () => {
      const added = await memory.add([{ role: "user", content: "I moved to Paris last month." }], {
        userId: "alice",
        metadata: { topic: "travel", source_app: "chat" },
        wait: true,
      });
      assert.equal(added.status, "DONE");
      assert.equal(added.results.length, 1);
      const [item] = added.results;
      assert.ok(item && typeof item.id === "string");
      assert.equal(item.memory, "I moved to Paris last month.");
      assert.equal(item.event, "ADD");
      assert.equal(typeof item["createdAt"], "string");
      assert.equal(item["created_at"], undefined);
      assert.equal(typeof item["validFrom"], "string"); // no list of names: every key converts
      assert.deepEqual(item["metadata"], { topic: "travel", source_app: "chat" });
      assert.ok(Array.isArray(added.queuedTurnIds));
      parisId = item.id as string;
      await memory.add("I drink green tea every morning.", {
        userId: "alice",
        metadata: { topic: "food" },
        wait: true,
      });
    });

    it("add without wait returns an id that resolves at once", async () => {
      const added = await memory.add(
        { role: "user", content: "My cat is called Miso." },
        {
          userId: "alice",
          timestamp: new Date("2024-05-01T10:00:00Z"),
          idempotencyKey: randomUUID(),
        },
      );
      assert.equal(added.status, "PENDING"); // stored; its vector is still being computed
      const id = added.results[0]?.id;
      assert.equal(typeof id, "string");
      // The server stores the memory before it answers (read-your-writes): no waiting.
      const found = await memory.get(id as string, { userId: "alice" });
      assert.equal(found?.memory, "My cat is called Miso.");
    });

    it("a search passes back the causal tokens of this object's own adds, once", async () => {
      const sent: Record<string, unknown>[] = [];
      const recording: typeof fetch = async (input, init) => {
        if (String(input).endsWith("/v1/memories/search"))
          sent.push(JSON.parse(String(init?.body)));
        return fetch(input, init);
      };
      const mine = new Memory({
        host: ctx.url,
        apiKey: await tenantKey(ctx.url, "acme"),
        fetch: recording,
      });
      const added = await mine.add("I keep bees on the roof.", { userId: "bea", infer: false });
      assert.equal(typeof added.causalToken, "string");
      await mine.search("insects", { userId: "someone-else" }); // a scope that does not see it
      const found = await mine.search("insects kept at home", { userId: "bea" });
      await mine.search("insects kept at home", { userId: "bea" }); // waited for already
      assert.deepEqual(
        sent.map((body) => body["causal_tokens"]),
        [undefined, [added.causalToken], undefined],
      );
      // the server waited for the vector: found by meaning (no word in common)
      assert.deepEqual(
        found.results.map((item) => item.memory),
        ["I keep bees on the roof."],
      );
    });

    it("expirationDate: a past one hides the memory from get, getAll and search", async () => {
      const expired = await memory.add("Dentist on Friday at nine.", {
        userId: "dora",
        infer: false,
        expirationDate: "2020-01-01", // its last day, long gone
      });
      const instant = await memory.add("Parking in row C.", {
        userId: "dora",
        infer: false,
        expirationDate: new Date(Date.now() - 60_000), // an instant, a minute ago
      });
      const kept = await memory.add("Dinner with Sam on Saturday.", {
        userId: "dora",
        infer: false,
        expirationDate: "2099-12-31",
        wait: true,
      });
      for (const gone of [expired, instant]) {
        const id = gone.results[0]?.id;
        assert.equal(typeof id, "string");
        assert.equal(await memory.get(id as string, { userId: "dora" }), null);
      }
      const listed = (await memory.getAll({ userId: "dora" })).results.map((m) => m.memory);
      assert.deepEqual(listed, ["Dinner with Sam on Saturday."]);
      const found = await memory.search("dentist parking dinner", { userId: "dora" });
      assert.deepEqual(
        found.results.map((m) => m.id),
        [kept.results[0]?.id],
      );
      await assert.rejects(
        memory.add("x", { userId: "dora", expirationDate: "next week" }),
        (error) => error instanceof ValidationError && error.status === 422,
      );
    });

    it("restore brings back what a model retired (MCP's delete_memory); retired lists it", async () => {
      const added = await memory.add("I keep bees.", { userId: "carol", infer: false });
      const id = added.results[0]?.id as string;
      // REST has no retire route (a user's delete erases): retire it as a model would.
      const retiredBy = await retireViaMcp(
        ctx.dataDir,
        "acme:carol",
        id,
        "Forget that I keep bees.",
      );
      assert.equal(retiredBy["retired"], id);
      assert.equal(await memory.get(id, { userId: "carol" }), null); // out of every read
      const { results } = await memory.retired({ userId: "carol" });
      assert.equal(results.length, 1);
      const [item] = results;
      assert.equal(item?.id, id);
      assert.equal(item?.memory, "I keep bees.");
      assert.equal(item?.retiredBy, "mcp");
      assert.equal(typeof item?.retiredAt, "string");
      assert.match(String(item?.reason), /Forget that I keep bees/);
      assert.deepEqual(item?.turnIds, []);
      assert.equal(item?.["retired_at"], undefined); // camelCased like every answer

      const other = new Memory({ host: ctx.url, apiKey: await tenantKey(ctx.url, "initech") });
      assert.deepEqual((await other.retired({ userId: "carol" })).results, []);
      await assert.rejects(other.restore(id), MemoryNotFoundError); // another tenant's
      await assert.rejects(memory.restore(randomUUID()), MemoryNotFoundError); // nobody's
      await assert.rejects(memory.restore(id, { userId: "dora" }), MemoryNotFoundError);
      await assert.rejects(memory.restore("not-a-uuid"), ValidationError);

      const restored = await memory.restore(id, { userId: "carol" });
      assert.equal(restored.id, id);
      assert.equal(restored.memory, "I keep bees.");
      assert.equal((await memory.get(id))?.memory, "I keep bees.");
      assert.deepEqual((await memory.retired({ userId: "carol" })).results, []);
      const events = (await memory.history(id)).map((h) => h.event);
      assert.deepEqual(events.slice(-2), ["RETIRE", "RESTORE"]);

      const current = await memory.restore(id).catch((e: unknown) => e);
      assert.ok(current instanceof NotRestorableError);
      assert.ok(current instanceof ConflictError); // a 409: both catches work
      assert.equal(current.status, 409);
      assert.equal(current.type, "NotRestorable");
      assert.equal(current.retryAfter, undefined); // retrying cannot help
      assert.match(current.message, /is current/);
      await memory.delete(id); // the user's delete erases
      const erased = await memory.restore(id).catch((e: unknown) => e);
      assert.ok(erased instanceof NotRestorableError);
      assert.match(erased.message, /was erased/);
      assert.ok(Array.isArray((await memory.retired({ userId: "carol", limit: 1 })).results));
      await assert.rejects(
        memory.retired({ userId: "carol", topK: 1 } as Record<string, unknown>),
        /retired\(\) does not support topK/,
      );
    });

    it("search ranks the relevant memory first, scores in [0, 1]", async () => {
      const found = await memory.search("Where does Alice live?", { userId: "alice", limit: 5 });
      assert.ok(found.results.length >= 1);
      assert.equal(found.results[0]?.memory, "I moved to Paris last month.");
      for (const hit of found.results) {
        assert.ok(typeof hit.score === "number" && hit.score >= 0 && hit.score <= 1);
        assert.equal(hit.userId, "alice");
      }
    });

    it("search takes Mem0 v3's scope in filters, metadata filters and topK", async () => {
      const scoped = await memory.search("tea", { filters: { user_id: "alice" }, topK: 1 });
      assert.equal(scoped.results.length, 1);
      assert.equal(scoped.results[0]?.memory, "I drink green tea every morning.");
      const travel = await memory.search("tea", {
        filters: { user_id: "alice", topic: "travel" },
        includeMetadata: true,
      });
      assert.deepEqual(
        travel.results.map((hit) => hit.memory),
        ["I moved to Paris last month."],
      );
      await assert.rejects(
        memory.search("tea", { userId: "alice", filters: { user_id: "bob" } }),
        ValidationError,
      );
    });

    it("get returns one memory, and null for an id the scope does not have", async () => {
      const item = await memory.get(parisId);
      assert.equal(item?.id, parisId);
      assert.equal(item?.userId, "alice");
      assert.equal(await memory.get(randomUUID()), null);
    });

    it("getAll pages newest first with nextCursor", async () => {
      const first = await memory.getAll({ userId: "alice", limit: 2 });
      assert.equal(first.results.length, 2);
      assert.equal(typeof first.nextCursor, "string");
      const rest = await memory.getAll({
        userId: "alice",
        limit: 2,
        cursor: first.nextCursor as string,
      });
      assert.equal(rest.results.length, 1);
      assert.equal(rest.nextCursor, undefined);
      const ids = [...first.results, ...rest.results].map((item) => item.id);
      assert.equal(new Set(ids).size, 3);
      assert.ok(ids.includes(parisId));
      const viaFilters = await memory.getAll({ filters: { user_id: "alice" } });
      assert.equal(viaFilters.results.length, 3);
      await assert.rejects(
        memory.getAll({ userId: "alice", filters: { topic: "x" } }),
        ValidationError,
      );
    });

    it("update corrects text, merges metadata, or replaces it", async () => {
      const corrected = await memory.update(parisId, "I moved to Lyon last month.");
      assert.equal(corrected.result.memory, "I moved to Lyon last month.");
      assert.equal(typeof corrected.message, "string");
      const merged = await memory.update(parisId, { metadata: { verified: true } });
      assert.deepEqual(merged.result.metadata, {
        topic: "travel",
        source_app: "chat",
        verified: true,
      });
      assert.equal(merged.result.memory, "I moved to Lyon last month.");
      const replaced = await memory.update(parisId, {
        text: "I moved to Lyon in May.",
        metadata: { topic: "moves" },
        replaceMetadata: true,
      });
      assert.deepEqual(replaced.result.metadata, { topic: "moves" });
      await assert.rejects(memory.update(parisId, {}), ValidationError);
    });

    it("history lists every change, oldest first", async () => {
      const history = await memory.history(parisId);
      assert.equal(history[0]?.event, "ADD");
      assert.equal(history[0]?.newMemory, "I moved to Paris last month.");
      const texts = history
        .filter((h) => h.event === "UPDATE")
        .map((h) => [h.oldMemory, h.newMemory]);
      assert.deepEqual(texts[0], ["I moved to Paris last month.", "I moved to Lyon last month."]);
      assert.deepEqual(texts.at(-1), ["I moved to Lyon last month.", "I moved to Lyon in May."]);
      for (const entry of history) {
        assert.equal(entry.memoryId, parisId);
        assert.equal(typeof entry.createdAt, "string");
        assert.ok(Array.isArray(entry.turnIds));
      }
    });

    it("delete removes one memory; its history stays readable", async () => {
      const answer = await memory.delete(parisId);
      assert.equal(typeof answer.message, "string");
      assert.equal(await memory.get(parisId), null);
      const history = await memory.history(parisId);
      assert.equal(history.at(-1)?.event, "DELETE");
      await assert.rejects(memory.delete(parisId), MemoryNotFoundError);
    });

    it("deleteAll empties one scope and no other", async () => {
      await memory.add("Bob plays the cello.", { userId: "bob", wait: true });
      const answer = await memory.deleteAll({ userId: "alice" });
      assert.equal(answer.deleted >= 2, true);
      assert.equal((await memory.getAll({ userId: "alice" })).results.length, 0);
      assert.equal((await memory.getAll({ userId: "bob" })).results.length, 1);
    });

    it("another tenant sees none of it", async () => {
      const other = new Memory({ host: ctx.url, apiKey: await tenantKey(ctx.url, "globex") });
      const [bobs] = (await memory.getAll({ userId: "bob" })).results;
      assert.ok(bobs);
      assert.equal(await other.get(bobs.id), null);
      assert.equal((await other.getAll({ userId: "bob" })).results.length, 0);
      await assert.rejects(other.delete(bobs.id), MemoryNotFoundError);
    });

    it("401: an unknown key is an AuthenticationError", async () => {
      const stranger = new Memory({ host: ctx.url, apiKey: "mhk_not-a-real-key" });
      const error = await stranger.search("x", { userId: "alice" }).catch((e: unknown) => e);
      assert.ok(error instanceof AuthenticationError);
      assert.ok(error instanceof MemoryError);
      assert.equal(error.status, 401);
      assert.equal(error.type, "Unauthorized");
      assert.equal(error.errorCode, "HTTP_401");
      const keyless = new Memory({ host: ctx.url });
      await assert.rejects(keyless.getAll({ userId: "alice" }), AuthenticationError);
    });

    it("new Memory() reads MEMHUB_SERVER_URL and MEMHUB_API_KEY, as Mem0's client reads its key", async () => {
      const saved = { url: process.env["MEMHUB_SERVER_URL"], key: process.env["MEMHUB_API_KEY"] };
      process.env["MEMHUB_SERVER_URL"] = ctx.url;
      process.env["MEMHUB_API_KEY"] = await tenantKey(ctx.url, "acme");
      try {
        const fromEnv = new Memory();
        assert.equal(fromEnv.host, ctx.url.replace(/\/+$/, ""));
        assert.equal((await fromEnv.ping()).tenant, "acme");
        // an explicit key still wins over the environment
        const explicit = new Memory({ apiKey: "mhk_not-a-real-key" });
        await assert.rejects(explicit.getAll({ userId: "alice" }), AuthenticationError);
        // MEMHUB_URL is read as well (the integration plan's name for it)
        delete process.env["MEMHUB_SERVER_URL"];
        process.env["MEMHUB_URL"] = ctx.url;
        assert.equal(new Memory().host, ctx.url.replace(/\/+$/, ""));
      } finally {
        delete process.env["MEMHUB_URL"];
        for (const [name, value] of [
          ["MEMHUB_SERVER_URL", saved.url],
          ["MEMHUB_API_KEY", saved.key],
        ] as const) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      }
    });

    it("404: changing a memory that does not exist is a MemoryNotFoundError", async () => {
      const error = await memory.update(randomUUID(), "new text").catch((e: unknown) => e);
      assert.ok(error instanceof MemoryNotFoundError);
      assert.equal(error.status, 404);
      assert.equal(error.type, "MemoryNotFound");
      await assert.rejects(memory.history(randomUUID()), MemoryNotFoundError);
    });

    it("422: refused input is a ValidationError with the server's details", async () => {
      const error = await memory
        .search("x", { userId: "alice", limit: 0 })
        .catch((e: unknown) => e);
      assert.ok(error instanceof ValidationError);
      assert.equal(error.status, 422);
      assert.equal(error.type, "ValidationError");
      assert.equal(error.details[0]?.loc, "body.limit");
      const noScope = await memory.add("no scope").catch((e: unknown) => e);
      assert.ok(noScope instanceof ValidationError);
      assert.equal(noScope.status, 422);
      assert.equal(noScope.type, "UsageError");
      await assert.rejects(memory.get("not-a-uuid"), ValidationError);
      // Mem0 options this client lacks are refused, not dropped on the way.
      const unsupported = { userId: "alice", customInstructions: "be brief" } as Record<
        string,
        unknown
      >;
      await assert.rejects(
        memory.add("x", unsupported),
        /add\(\) does not support customInstructions/,
      );
      await assert.rejects(
        memory.search("x", { userId: "alice", rerank: true } as Record<string, unknown>),
        ValidationError,
      );
      await assert.rejects(memory.deleteAll({ appId: "a" } as Record<string, unknown>), /appId/);
      await assert.rejects(memory.deleteAll({}), ValidationError);
    });

    it("no server: a NetworkError without a status", async () => {
      const nowhere = new Memory({ host: `http://127.0.0.1:${await freePort()}` });
      const error = await nowhere.search("x", { userId: "alice" }).catch((e: unknown) => e);
      assert.ok(error instanceof NetworkError);
      assert.equal(error.status, undefined);
      assert.equal(error.errorCode, "NETWORK");
      assert.match(error.message, /cannot reach/);
    });

    it("a server that never answers: a NetworkError after timeoutMs", async () => {
      // A socket that accepts and stays silent: a hung server, which memhub cannot be made into.
      const sockets: Socket[] = [];
      const silent: Server = createServer((socket) => void sockets.push(socket));
      const port = await new Promise<number>((done) =>
        silent.listen(0, "127.0.0.1", () => done((silent.address() as { port: number }).port)),
      );
      try {
        const hung = new Memory({ host: `http://127.0.0.1:${port}`, timeoutMs: 300 });
        const started = Date.now();
        const error = await hung.getAll({ userId: "alice" }).catch((e: unknown) => e);
        assert.ok(error instanceof NetworkError);
        assert.match(error.message, /within 300 ms/);
        assert.ok(Date.now() - started < 5000);
      } finally {
        for (const socket of sockets) socket.destroy();
        silent.close();
      }
    });
  });

  describe("errorFromResponse", () => {
    it("maps every status the server documents to its class", () => {
      const body = (type: string) => JSON.stringify({ error: "why", type });
      const cases: Array<[number, string, new (...a: never[]) => MemoryError]> = [
        [401, "Unauthorized", AuthenticationError],
        [403, "Forbidden", PermissionDeniedError],
        [404, "NotFound", MemoryNotFoundError],
        [409, "Conflict", ConflictError],
        [409, "NotRestorable", NotRestorableError],
        [413, "PayloadTooLarge", MemoryQuotaExceededError],
        [422, "UsageError", ValidationError],
        [429, "TooManyRequests", RateLimitError],
        [500, "StoreError", ServerError],
        [502, "ProviderHTTPError", NetworkError],
        [503, "StoreUnavailable", NetworkError],
      ];
      for (const [status, type, kind] of cases) {
        const error = errorFromResponse(status, body(type), "2");
        assert.ok(error instanceof kind, `${status} -> ${kind.name}, got ${error.name}`);
        assert.equal(error.name, kind.name);
        assert.equal(error.status, status);
        assert.equal(error.type, type);
        assert.equal(error.retryAfter, 2);
        assert.equal(error.message, `${status} ${type}: why`);
      }
      assert.ok(errorFromResponse(403, body("Forbidden")) instanceof AuthenticationError);
      assert.ok(errorFromResponse(409, body("Conflict")) instanceof ValidationError);
    });

    it("keeps a proxy's non-JSON answer as the message", () => {
      const error = errorFromResponse(502, "<html>Bad Gateway</html>", null);
      assert.ok(error instanceof NetworkError);
      assert.equal(error.type, undefined);
      assert.equal(error.retryAfter, undefined);
      assert.match(error.message, /Bad Gateway/);
    });
  });

  describe("Memory config", () => {
    it("refuses a vector store memhub does not run on, and a bad host", () => {
      assert.throws(
        () => new Memory({ vectorStore: { provider: "qdrant", config: {} } }),
        ConfigurationError,
      );
      assert.throws(() => new Memory({ host: "not a url" }), ConfigurationError);
    });

    it("warns once that provider sections are the server's", (t) => {
      const warn = t.mock.method(console, "warn", () => undefined);
      new Memory({ vectorStore: { provider: "pgvector" }, llm: { provider: "openai" } });
      new Memory({ embedder: { provider: "openai" } });
      assert.equal(warn.mock.callCount(), 1);
      assert.match(String(warn.mock.calls[0]?.arguments[0]), /vectorStore, llm/);
    });
  });
}
