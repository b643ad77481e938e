// MCP tasks (io.modelcontextprotocol/tasks, protocol 2026-07-28) through the
// TypeScript SDK's v2 client (@modelcontextprotocol/client), over stdio or HTTP.
//
// The SDK sends tasks/get and tasks/cancel with their routing headers, but its
// callTool refuses a `task` result ("Unsupported result type"), so the tools/call
// that creates a task goes through the SDK's transport as a raw JSON-RPC request.
//
// Usage: node tasks.mjs stdio BINARY   |   node tasks.mjs http URL
// Prints one JSON report on stdout; the Python test checks it.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import * as z from "zod";

const [how, target] = process.argv.slice(2);
const EXTENSION = "io.modelcontextprotocol/tasks";
const HARD_MODEL = process.env.SGTEST_HARD_MODEL;
const OPT_MODEL = "var 1..10: x; var 1..10: y;\nconstraint x + y <= 12;\nsolve maximize 2*x + y;\n";

function meta(declare) {
  return {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "solvergate-tests-ts", version: "0" },
    "io.modelcontextprotocol/clientCapabilities": declare ? { extensions: { [EXTENSION]: {} } } : {},
  };
}

function transport() {
  if (how === "stdio") {
    return new StdioClientTransport({
      command: target,
      args: ["stdio", "--toolset", "full"],
      env: Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)),
      stderr: "inherit",
    });
  }
  return new StreamableHTTPClientTransport(new URL(target));
}

// Raw JSON-RPC over the SDK's transport.
const raw = transport();
const pending = new Map();
let nextId = 0;
raw.onmessage = (message) => {
  if ("id" in message && pending.has(message.id)) {
    pending.get(message.id)(message);
    pending.delete(message.id);
  }
};
await raw.start();
raw.setProtocolVersion?.("2026-07-28");
function rpc(method, params, declare = true) {
  return new Promise((resolve) => {
    const id = ++nextId;
    pending.set(id, resolve);
    // Over HTTP an error can come back as an HTTP status, which the
    // transport throws with the JSON-RPC answer as its text.
    raw.send({ jsonrpc: "2.0", id, method, params: { ...params, _meta: meta(declare) } }).catch((error) => {
      pending.delete(id);
      try {
        resolve(JSON.parse(error.data?.text ?? ""));
      } catch {
        resolve({ error: { code: null, message: String(error) } });
      }
    });
  });
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function follow(taskId, get) {
  const seen = [];
  for (;;) {
    const task = await get(taskId);
    seen.push({ status: task.status, statusMessage: task.statusMessage ?? null });
    if (["completed", "failed", "cancelled"].includes(task.status)) return { task, seen };
    await sleep(200);
  }
}
const rawGet = async (taskId) => (await rpc("tasks/get", { taskId })).result;

const report = {};

// 1. Not declared: a plain result.
const plain = await rpc("tools/call", { name: "solve_minizinc_model", arguments: { model: OPT_MODEL } }, false);
report.plain = { resultType: plain.result.resultType, taskId: plain.result.taskId ?? null, objective: plain.result.structuredContent.objective };

// 2. Declared: a task, followed to its end, with live figures on the way.
const created = (await rpc("tools/call", { name: "solve_minizinc_model", arguments: { model: HARD_MODEL, timeout_ms: 4000 } })).result;
report.created = created;
const solved = await follow(created.taskId, rawGet);
report.solved = {
  status: solved.task.status,
  isError: solved.task.result.isError,
  objective: solved.task.result.structuredContent.objective,
  working: solved.seen.filter((s) => s.status === "working").map((s) => s.statusMessage),
};

// 3. tasks/get and tasks/cancel through the SDK's own client, on a long solve.
const long = (await rpc("tools/call", { name: "solve_minizinc_model", arguments: { model: HARD_MODEL, timeout_ms: 60000 } })).result;
let client = null;
if (how === "http") {
  client = new Client(
    { name: "solvergate-tests-ts", version: "0" },
    { capabilities: { extensions: { [EXTENSION]: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(target)));
}
const Task = z.looseObject({ taskId: z.string(), status: z.string() });
const get = client
  ? (taskId) => client.request({ method: "tasks/get", params: { taskId } }, Task)
  : rawGet;
await sleep(1500);
report.longBefore = (await get(long.taskId)).status;
const cancelled = client
  ? await client.request({ method: "tasks/cancel", params: { taskId: long.taskId } }, z.looseObject({}))
  : (await rpc("tasks/cancel", { taskId: long.taskId })).result;
report.cancelAck = cancelled;
report.longAfter = (await get(long.taskId)).status;

// 4. An unknown id and a method of the earlier revision.
report.unknown = (await rpc("tasks/get", { taskId: "f".repeat(32) })).error?.code ?? null;
report.tasksResult = (await rpc("tasks/result", { taskId: long.taskId })).error?.code ?? null;

if (client) await client.close();
await raw.close();
process.stdout.write(JSON.stringify(report) + "\n");
