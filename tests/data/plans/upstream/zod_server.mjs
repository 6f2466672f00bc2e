// An MCP server declared with the official TypeScript SDK and zod, as a TypeScript author
// writes one; prints its `tools/list` (what a client, and `tdsl serve --plans --upstream`,
// reads) as JSON. Run by scripts/zod-tools, which installs the pinned packages under
// target/zod-tools and copies this file there; its output is tests/data/plans/upstream/
// zod_tools.json, which tests/plans.rs checks against a fresh run and reads as server `ts`.
//
// Each tool is declared twice: with zod 3's API (`zod/v3`, which the SDK turns into JSON
// Schema with zod-to-json-schema: a schema object used twice becomes a JSON pointer to its
// first place, `#/properties/state`) and with zod 4's (`zod/v4`, turned by zod's own
// `toJSONSchema`: recursion through `definitions/__schema0`, `nullable` as `anyOf`), the
// second named `v4_…`.
import { readFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import * as v3 from "zod/v3";
import * as v4 from "zod/v4";

function declare(server, z, prefix) {
  const State = z.enum(["open", "closed"]);
  const Issue = z.object({
    number: z.number().int(),
    title: z.string().describe("The issue's title, as written"),
    state: State,
    assignee: z.string().nullable(),
    labels: z.array(z.string()),
  });
  const Person = z.object({ login: z.string(), email: z.string().nullable() });
  const Node = z.lazy(() => z.object({ name: z.string(), children: z.array(Node) }));
  const none = async () => ({ content: [] });
  server.registerTool(
    prefix + "search_issues",
    {
      description: "Searches a repository's issues.\nNewest first; at most `limit`.",
      inputSchema: {
        repo: z.string().describe("owner/name"),
        state: State.optional(),
        labels: z.array(z.string()).optional(),
        filter: z
          .object({ state: State, author: z.string().optional() })
          .optional()
          .describe("Only the issues that match"),
        sort: z
          .array(z.object({ field: z.enum(["created", "updated"]), direction: z.enum(["asc", "desc"]).default("desc") }))
          .optional(),
        limit: z.number().int().min(1).max(50).default(20),
      },
      outputSchema: { issues: z.array(Issue), total: z.number().int() },
    },
    none,
  );
  server.registerTool(
    prefix + "get_repo",
    {
      description: "One repository.",
      inputSchema: { repo: z.string() },
      outputSchema: {
        name: z.string(),
        owner: Person,
        maintainers: z.array(Person),
        stars: z.number().int().min(0),
        topics: z.record(z.string(), z.string()),
      },
    },
    none,
  );
  server.registerTool(
    prefix + "file_tree",
    {
      description: "The files of a repository, as a tree.",
      inputSchema: { repo: z.string(), depth: z.number().int().min(1).max(5).optional() },
      outputSchema: { tree: Node },
    },
    none,
  );
}

const version = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), "utf8")).version;
const server = new McpServer({ name: "zod-tools", version: "1.0.0" });
declare(server, v3.z, "");
declare(server, v4.z, "v4_");
const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
await server.connect(serverSide);
const client = new Client({ name: "tdsl-zod-tools", version: "1.0.0" });
await client.connect(clientSide);
const { tools } = await client.listTools();
await client.close();
const about =
  `The tools/list of tests/data/plans/upstream/zod_server.mjs: an MCP server of the official TypeScript SDK ` +
  `(@modelcontextprotocol/sdk ${version("@modelcontextprotocol/sdk")}) declared with zod ${version("zod")} ` +
  `(zod 3's API, then zod 4's as v4_*). Made by scripts/zod-tools; tests/plans.rs checks it against a fresh run ` +
  `and reads it as the upstream server \`ts\`.`;
process.stdout.write(JSON.stringify({ about, tools }, null, 2) + "\n");
