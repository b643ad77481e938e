// Kept results read as MCP resources through the official TypeScript SDK
// (issue 45): a solve whose solution is too large for the text part, then
// the result's resource_link followed with resources/read, one slice of its
// list and one scalar by the published template, resources/list and
// resources/templates/list, and an unknown URI refused with -32602.
//
//   node resources.mjs stdio BINARY   the 1.x client (`@modelcontextprotocol/sdk`),
//                                     which negotiates 2025-11-25, over stdio
//   node resources.mjs http URL       the v2 client (`@modelcontextprotocol/client`)
//                                     pinned to 2026-07-28 over HTTP: no session,
//                                     each request a fresh server; a second
//                                     client reads the result by its id
//
// Prints one line per check ("ok ..." or "FAIL ...") and a last summary line;
// exits 1 when a check failed.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as ClientV2, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { isDeepStrictEqual } from "node:util";

const [how, target] = process.argv.slice(2);
if (!["stdio", "http"].includes(how) || !target) {
  console.error("usage: node resources.mjs stdio BINARY | node resources.mjs http URL");
  process.exit(2);
}

// 20,000 values, x[i] = i mod 10 (1-based), and their sum: far more than
// the text part shows.
const N = 20000;
const LARGE = `array[1..${N}] of var 0..9: x;
constraint forall(i in 1..${N})(x[i] = i mod 10);
var 0..200000: total;
constraint total = sum(x);
solve satisfy;
`;
const TEMPLATE = "solvergate://results/{id}/solution/{name}{?offset,limit}";

let failures = 0;
let checks = 0;
function check(condition, what, detail) {
  checks += 1;
  if (condition) {
    console.log(`ok ${what}`);
  } else {
    failures += 1;
    console.log(`FAIL ${what}: ${JSON.stringify(detail).slice(0, 1500)}`);
  }
}

async function connect() {
  if (how === "stdio") {
    let negotiated;
    const transport = new StdioClientTransport({
      command: target,
      args: ["stdio", "--toolset", "full"],
      env: Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)),
      stderr: "inherit",
    });
    // The 1.x client hands the negotiated version to a transport that takes it.
    transport.setProtocolVersion = (version) => {
      negotiated = version;
    };
    const client = new ClientV1({ name: "solvergate-resources", version: "1.0.0" });
    await client.connect(transport);
    return { client, version: negotiated };
  }
  const client = new ClientV2(
    { name: "solvergate-resources", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(target)));
  return { client, version: client.getNegotiatedProtocolVersion() };
}

const { client, version } = await connect();
const expectedVersion = how === "stdio" ? "2025-11-25" : "2026-07-28";
check(version === expectedVersion, `negotiated ${expectedVersion}`, version);

const result = await client.callTool(
  { name: "solve_minizinc_model", arguments: { model: LARGE, solver: "gecode", timeout_ms: 60000 } },
  undefined,
  { timeout: 120_000 },
);
const solution = result.structuredContent?.solution;
check(!result.isError && solution?.x?.length === N && solution.total === 90000, "the solve answered", {
  isError: result.isError,
  status: result.structuredContent?.status,
});
const [text, link, ...rest] = result.content ?? [];
check(rest.length === 0 && text?.type === "text" && link?.type === "resource_link", "a text part, then a resource_link", result.content);
const uri = link?.uri ?? "";
check(/^solvergate:\/\/results\/solve_minizinc_model-[0-9a-f]{32}$/.test(uri), "the link names a kept result", uri);
check(link?.mimeType === "application/json" && Number.isInteger(link?.size) && link.size > 0, "the link gives its type and size", link);
check(text?.text?.includes(`Whole result: ${uri} (`), "the text names the same URI", text?.text?.slice(-600));

// Another client reads it over HTTP: without a session only the id is shared.
const reader = how === "http" ? (await connect()).client : client;

const whole = await reader.readResource({ uri });
const [contents] = whole.contents;
check(whole.contents.length === 1 && contents.uri === uri && contents.mimeType === "application/json", "resources/read names the result", {
  uri: contents?.uri,
  mimeType: contents?.mimeType,
});
check(isDeepStrictEqual(JSON.parse(contents.text), result.structuredContent), "resources/read gives the whole structured result", contents.text.slice(0, 300));

const sliceUri = `${uri}/solution/x?offset=1230&limit=10`;
const slice = await reader.readResource({ uri: sliceUri });
const expectedSlice = Array.from({ length: 10 }, (_, k) => (1231 + k) % 10);
check(isDeepStrictEqual(JSON.parse(slice.contents[0].text), expectedSlice), "a slice of x by the template", slice.contents[0].text);
check(slice.contents[0].uri === sliceUri, "the slice is named by its own URI", slice.contents[0].uri);
const total = await reader.readResource({ uri: `${uri}/solution/total` });
check(JSON.parse(total.contents[0].text) === 90000, "a scalar by the template", total.contents[0].text);

const { resources } = await reader.listResources();
check(resources.some((resource) => resource.uri === uri), "resources/list lists it", resources.slice(0, 3));
check(resources[0]?.uri === uri, "newest first", resources.slice(0, 3).map((resource) => resource.uri));
const { resourceTemplates } = await reader.listResourceTemplates();
check(
  isDeepStrictEqual(resourceTemplates.map((template) => template.uriTemplate), [TEMPLATE]),
  "resources/templates/list publishes the value template",
  resourceTemplates,
);

const missing = `solvergate://results/solve_minizinc_model-${"0".repeat(32)}`;
let refused = null;
try {
  await reader.readResource({ uri: missing });
} catch (error) {
  refused = error;
}
check(refused?.code === -32602 && refused?.data?.uri === missing, "an unknown URI is -32602 with its URI", {
  code: refused?.code,
  data: refused?.data,
  message: refused?.message,
});

await client.close();
if (reader !== client) await reader.close();
console.log(`${checks} checks, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
