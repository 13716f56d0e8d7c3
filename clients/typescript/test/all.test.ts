/** One `memhub serve` for every suite: started before them, stopped after. */

import { after, before, describe } from "node:test";

import { agentSuite } from "./agent.js";
import { docsSuite } from "./docs.js";
import { memorySuite, type ServerContext } from "./memory.js";
import { startServer, type RunningServer } from "./server.js";

describe("memhub TypeScript client against memhub serve", () => {
  const ctx: ServerContext = { url: "", dataDir: "" };
  let server: RunningServer | undefined;

  before(async () => {
    server = await startServer();
    ctx.url = server.url;
    ctx.dataDir = server.dataDir;
  });

  after(async () => {
    await server?.stop();
  });

  memorySuite(ctx);
  agentSuite(ctx);
  docsSuite(ctx);
});
