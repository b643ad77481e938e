// The proof with the official TypeScript SDK client: a synchronous
// solve of about 70 s under the SDK's default 60 s request timeout with
// resetTimeoutOnProgress completes, because the server reports progress at
// least every 5 s. Prints one JSON object: the call's outcome, its length,
// and every progress notification with the seconds since the call started.
// The pytest side (tests/mcp/test_typescript_client.py) judges it.
//
//   node long_solve.mjs SOLVERGATE_BINARY SOLVE_MS
import { connect } from "./connect.mjs";
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from "@modelcontextprotocol/sdk/shared/protocol.js";

const [binary, solveMs] = process.argv.slice(2);
if (!binary || !solveMs) {
  console.error("usage: node long_solve.mjs SOLVERGATE_BINARY SOLVE_MS");
  process.exit(2);
}

// The suite's long-running model (tests/mcp/helpers.py HARD_MODEL, passed by pytest).
const HARD_MODEL = process.env.SGTEST_HARD_MODEL;
if (!HARD_MODEL) {
  console.error("SGTEST_HARD_MODEL is not set: run this script from tests/mcp/test_typescript_client.py");
  process.exit(2);
}

const client = await connect(binary, "solvergate-long-solve");
await client.listTools();

const progress = [];
const started = performance.now();
const seconds = () => (performance.now() - started) / 1000;
let outcome;
try {
  const result = await client.callTool(
    {
      name: "solve_minizinc_model",
      // all_solutions: MiniZinc prints every improving solution as it is
      // found, so the progress messages can count them.
      arguments: { model: HARD_MODEL, timeout_ms: Number(solveMs), all_solutions: true },
    },
    undefined,
    {
      timeout: DEFAULT_REQUEST_TIMEOUT_MSEC,
      resetTimeoutOnProgress: true,
      onprogress: (update) => progress.push({ at: seconds(), ...update }),
    },
  );
  const data = result.structuredContent ?? {};
  outcome = {
    error: null,
    is_error: result.isError === true,
    status: data.status ?? null,
    objective: data.objective ?? null,
    solutions: Array.isArray(data.solutions) ? data.solutions.length : null,
  };
} catch (error) {
  outcome = { error: String(error.message ?? error) };
}
const elapsed = seconds();
await client.close();
console.log(
  JSON.stringify({ timeout_ms: DEFAULT_REQUEST_TIMEOUT_MSEC, elapsed_s: elapsed, outcome, progress }),
);
