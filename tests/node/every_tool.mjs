// The official TypeScript SDK client (@modelcontextprotocol/sdk 1.x) against
// the stdio binary: lists the tools, calls every one of them with meaningful
// arguments and checks what each answers. The SDK validates every result's
// structuredContent against the tool's output schema (Client.callTool throws
// on a mismatch); this script first proves that check is on by handing the
// client a deliberately wrong schema and seeing the call fail.
//
//   node every_tool.mjs SOLVERGATE_BINARY WORK_DIR
//
// The server inherits this process's environment (the test passes the
// runtime, the data dirs and SOLVERGATE_CPSAT_PYTHON). Prints one line per
// call and a summary; exits 1 on the first problem.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "./connect.mjs";

const [binary, work] = process.argv.slice(2);
if (!binary || !work) {
  console.error("usage: node every_tool.mjs SOLVERGATE_BINARY WORK_DIR");
  process.exit(2);
}

// ---- instances ------------------------------------------------------------

// Optimum 2*10 + 2 = 22 at x=10, y=2.
const OPT_MODEL = "var 1..10: x; var 1..10: y;\nconstraint x + y <= 12;\nsolve maximize 2*x + y;\n";
const UNSAT_MODEL = "var 1..3: x;\nconstraint x > 1;\nconstraint x < 2;\nsolve satisfy;\n";
// The suite's long-running model (tests/mcp/helpers.py HARD_MODEL, passed by pytest).
const HARD_MODEL = process.env.SGTEST_HARD_MODEL;
if (!HARD_MODEL) {
  console.error("SGTEST_HARD_MODEL is not set: run this script from tests/mcp/test_typescript_client.py");
  process.exit(2);
}
const N_MODEL = "int: n;\nvar 1..n: x;\nsolve maximize x;\n";
const N_DATA = "n = 60;\n";
const X_CHECKER = 'int: n;\nint: x;\nconstraint x <= n;\noutput ["CORRECT \\(x)\\n"];\n';

// Unique optimum: items 1 and 2, value 13.
const KNAPSACK = {
  capacity: 9,
  items: [
    { weight: 3, value: 4 },
    { weight: 4, value: 5 },
    { weight: 5, value: 8 },
    { weight: 2, value: 3 },
  ],
};
const knapsackScript = (extraCap) => `import json
from ortools.sat.python import cp_model

PROBLEM = json.loads(${JSON.stringify(JSON.stringify(KNAPSACK))})
items = PROBLEM["items"]
model = cp_model.CpModel()
take = [model.new_bool_var(f"take{i}") for i in range(len(items))]
weight = sum(t * item["weight"] for t, item in zip(take, items))
model.add(weight <= PROBLEM["capacity"])
${extraCap === undefined ? "" : `model.add(weight <= ${extraCap})`}
model.maximize(sum(t * item["value"] for t, item in zip(take, items)))
solver = cp_model.CpSolver()
solver.parameters.num_workers = 1
status = solver.solve(model)
chosen = [i for i in range(len(items)) if solver.value(take[i])]
print(json.dumps({
    "status": "optimal" if status == cp_model.OPTIMAL else "feasible",
    "objective": int(solver.objective_value),
    "solution": {"chosen": chosen},
}))
`;
// Checks a knapsack answer against payload["problem"] (JSON text).
const KNAPSACK_CHECKER = `import json, sys
payload = json.load(open(sys.argv[1]))
problem = json.loads(payload["problem"])
chosen = payload["solution"]["chosen"]
errors = []
weight = sum(problem["items"][i]["weight"] for i in chosen)
value = sum(problem["items"][i]["value"] for i in chosen)
if weight > problem["capacity"]:
    errors.append("over capacity")
if value != payload["objective"]:
    errors.append("objective is not the chosen value")
print(json.dumps({"status": "rejected" if errors else "accepted", "errors": errors}))
`;
const SLEEPER = "import time\ntime.sleep(60)\n";

const RATES = {
  air: { per_kg: 4.2, min_charge: 150, volumetric_divisor: 6000, transit_days: 3 },
  lcl: { per_cbm: 85, min_cbm: 1, transit_days: 30 },
  fcl: {
    transit_days: 28,
    containers: [
      { type: "20GP", length_cm: 589, width_cm: 235, height_cm: 239, max_payload_kg: 28000, price: 1800 },
      { type: "40HC", length_cm: 1203, width_cm: 235, height_cm: 269, max_payload_kg: 26500, price: 2900 },
    ],
  },
};
const pallets = (count, height, kg, stackable) => [
  { length_cm: 120, width_cm: 80, height_cm: height, weight_kg: kg, count, stackable },
];
const LOADS = {
  orders: [
    { id: "M-AIR", deadline_days: 5, pallets: pallets(1, 110, 150, false) },
    { id: "M-FCL", deadline_days: 50, pallets: pallets(36, 110, 350, true) },
    { id: "M-LCL", deadline_days: 60, pallets: pallets(1, 280, 80, false) },
  ],
  rates: RATES,
};

// gross_amount 500 is misread: quantity × rate says 520.
const SEED = {
  variables: {
    gross_amount: { obs: 500, confidence: 0.3, mult_factor: 100, min: 0, max: 100000, fixed: false },
    quantity: { obs: 10, mult_factor: 1, fixed: true },
    rate_per_pc: { obs: 52, mult_factor: 100, fixed: true },
  },
  equations: [{ lhs: "gross_amount", rhs: "quantity * rate_per_pc", relation: "==", weight: 1000, tolerance: 0 }],
  timeout_seconds: 5,
  num_workers: 2,
};
// By hand: units 70, price 50, objective 3500.
const OPTIMISATION = {
  variables: {
    units: { min: 0, max: 1000, mult_factor: 1 },
    price: { min: 0, max: 500, mult_factor: 100 },
  },
  objective: { expr: "units * price", direction: "maximize" },
  hard_constraints: [{ lhs: "units + price", rhs: "120", relation: "<=" }],
  soft_constraints: [{ lhs: "price", rhs: "50", relation: "<=", weight: 500, tolerance: 0 }],
  timeout_seconds: 10,
};

// ---- files ----------------------------------------------------------------

mkdirSync(work, { recursive: true });
const file = (name, text) => {
  const path = join(work, name);
  writeFileSync(path, text);
  return path;
};
const modelPath = file("n.mzn", N_MODEL);
const dataPath = file("n.dzn", N_DATA);
const checkerPath = file("n.mzc.mzn", X_CHECKER);
const unsatPath = file("unsat.mzn", UNSAT_MODEL);
const scriptPath = file("knapsack.py", knapsackScript());
const cpsatCheckerPath = file("knapsack_checker.py", KNAPSACK_CHECKER);
const sleeperPath = file("sleeper.py", SLEEPER);
const tablePath = join(work, "table.csv");

// ---- the client -----------------------------------------------------------

const client = await connect(binary, "solvergate-every-tool");

let failures = 0;
function check(condition, what, detail) {
  if (!condition) {
    failures += 1;
    console.log(`FAIL ${what}: ${JSON.stringify(detail).slice(0, 1500)}`);
  }
}

const { tools } = await client.listTools();
const listed = new Set(tools.map((tool) => tool.name));
const called = new Set();
for (const tool of tools) {
  check(tool.outputSchema !== undefined, `${tool.name} has an output schema`, tool);
  check(client.getToolOutputValidator(tool.name) !== undefined, `${tool.name} output validator cached`, tool.name);
}

/** Calls a tool through the SDK (which validates structuredContent against
 * the output schema) and returns the structured content. */
async function call(name, args) {
  called.add(name);
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  const text = (result.content ?? []).map((part) => part.text ?? "").join("\n");
  if (result.isError) {
    throw new Error(`${name} answered an error: ${text.slice(0, 800)}`);
  }
  if (result.structuredContent === undefined) {
    throw new Error(`${name} returned no structuredContent`);
  }
  console.log(`ok ${name}`);
  return result.structuredContent;
}

async function untilDone(getter, args, done) {
  for (let i = 0; i < 600; i += 1) {
    const job = await call(getter, args);
    if (done.includes(job.state)) return job;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${getter} ${JSON.stringify(args)} never finished`);
}
const TERMINAL = ["succeeded", "failed", "timeout", "cancelled"];

// ---- the validation is really on -------------------------------------------

{
  // A copy of the listing in which solve_minizinc_model's schema says
  // `status` is an integer: the real answer must now be refused.
  const wrong = tools.map((tool) =>
    tool.name === "solve_minizinc_model"
      ? {
          ...tool,
          outputSchema: {
            ...tool.outputSchema,
            properties: { ...tool.outputSchema.properties, status: { type: "integer" } },
          },
        }
      : tool,
  );
  client.cacheToolMetadata(wrong);
  let refused = null;
  try {
    await client.callTool({ name: "solve_minizinc_model", arguments: { model: OPT_MODEL } });
  } catch (error) {
    refused = String(error.message ?? error);
  }
  check(
    refused !== null && refused.includes("does not match the tool's output schema"),
    "a wrong output schema makes the SDK refuse the result",
    refused,
  );
  console.log(`ok validation is on: ${refused}`);
  await client.listTools(); // the real schemas again
}

// ---- every tool ------------------------------------------------------------

const runtime = await call("check_runtime", {});
check(runtime.installed === true && runtime.cpsat?.installed === true, "check_runtime: both runtimes installed", runtime);
const solvers = await call("list_available_solvers", {});
check(JSON.stringify(solvers).includes("org.gecode.gecode"), "list_available_solvers: gecode", solvers);

const checked = await call("check_minizinc_model", { model: OPT_MODEL });
check(checked.status === "ok", "check_minizinc_model", checked);
const inspected = await call("inspect_minizinc_model", { model: OPT_MODEL });
check(inspected.status === "ok", "inspect_minizinc_model", inspected);
const solved = await call("solve_minizinc_model", { model: OPT_MODEL });
check(solved.status === "optimal" && solved.objective === 22, "solve_minizinc_model", solved);

const checkedFiles = await call("check_minizinc_files", { model_path: modelPath, data_path: dataPath });
check(checkedFiles.status === "ok", "check_minizinc_files", checkedFiles);
const inspectedFiles = await call("inspect_minizinc_files", { model_path: modelPath, data_path: dataPath });
check(inspectedFiles.status === "ok", "inspect_minizinc_files", inspectedFiles);
const solvedFiles = await call("solve_minizinc_files", {
  model_path: modelPath,
  data_path: dataPath,
  checker_path: checkerPath,
});
check(solvedFiles.status === "optimal" && solvedFiles.objective === 60, "solve_minizinc_files", solvedFiles);

// Solve jobs: one to the end, one cancelled while it runs.
const job = await call("submit_solve_job", { model: OPT_MODEL });
const finished = await untilDone("get_solve_job", { job_id: job.job_id }, TERMINAL);
check(finished.state === "succeeded" && finished.result?.objective === 22, "get_solve_job", finished);
const long = await call("submit_solve_job", { model: HARD_MODEL, timeout_ms: 60000 });
const cancelled = await call("cancel_solve_job", { job_id: long.job_id });
check(cancelled.state === "cancelled", "cancel_solve_job", cancelled);
const solveJobs = await call("list_solve_jobs", {});
check(
  [job.job_id, long.job_id].every((id) => solveJobs.jobs.some((row) => row.job_id === id)),
  "list_solve_jobs",
  solveJobs,
);

// Portfolios: a race to the end, one stopped.
const race = await call("submit_portfolio_job", {
  models: [OPT_MODEL],
  solvers: ["gecode"],
  seed_count: 2,
  per_attempt_timeout_ms: 20000,
});
const raced = await untilDone("get_portfolio_job", { job_id: race.job_id }, TERMINAL);
check(raced.state === "succeeded" && raced.result?.winner !== null, "get_portfolio_job", raced);
const longRace = await call("submit_portfolio_job", {
  models: [HARD_MODEL],
  solvers: ["gecode"],
  per_attempt_timeout_ms: 60000,
});
const stopped = await call("cancel_portfolio_job", { job_id: longRace.job_id });
check(stopped.state === "cancelled", "cancel_portfolio_job", stopped);
const races = await call("list_portfolio_jobs", {});
check(races.jobs.length === 2, "list_portfolio_jobs", races);

// CP-SAT.
const run = await call("run_cpsat_python", { source: knapsackScript(), script_timeout_ms: 60000 });
check(run.status === "optimal" && run.objective === 13, "run_cpsat_python", run);
const runFile = await call("run_cpsat_python_file", { script_path: scriptPath, script_timeout_ms: 60000 });
check(runFile.status === "optimal" && runFile.objective === 13, "run_cpsat_python_file", runFile);
const runChecked = await call("run_cpsat_python_file_checked", {
  script_path: scriptPath,
  checker_path: cpsatCheckerPath,
  problem: KNAPSACK,
  script_timeout_ms: 60000,
});
check(JSON.stringify(runChecked).includes('"accepted"'), "run_cpsat_python_file_checked", runChecked);
const experiment = await call("run_cpsat_python_experiment", {
  attempts: [
    { name: "capped", source: knapsackScript(5) },
    { name: "full", source: knapsackScript() },
  ],
  objective_sense: "maximize",
  checker: KNAPSACK_CHECKER,
  problem: KNAPSACK,
  default_script_timeout_ms: 20000,
  checker_timeout_ms: 10000,
});
check(JSON.stringify(experiment).includes('"full"'), "run_cpsat_python_experiment", experiment);
const cpsatJob = await call("submit_cpsat_python_job", {
  source: knapsackScript(),
  checker: KNAPSACK_CHECKER,
  problem: KNAPSACK,
  script_timeout_ms: 60000,
});
const cpsatDone = await untilDone("get_cpsat_python_job", { job_id: cpsatJob.job_id }, TERMINAL);
check(cpsatDone.state === "succeeded" && cpsatDone.result?.objective === 13, "get_cpsat_python_job", cpsatDone);
const sleeping = await call("submit_cpsat_python_file_job", { script_path: sleeperPath, script_timeout_ms: 60000 });
const woken = await call("cancel_cpsat_python_job", { job_id: sleeping.job_id });
check(woken.state === "cancelled", "cancel_cpsat_python_job", woken);
const cpsatJobs = await call("list_cpsat_python_jobs", {});
check(cpsatJobs.jobs.length === 2, "list_cpsat_python_jobs", cpsatJobs);

// Saves and replay.
const mznTarget = join(work, "saved-minizinc");
const savedMzn = await call("save_verified_minizinc_model", {
  model: N_MODEL,
  data: N_DATA,
  checker: X_CHECKER,
  problem: "Pick the largest x up to n.",
  target_dir: mznTarget,
});
check(savedMzn.status === "saved", "save_verified_minizinc_model", savedMzn);
const cpsatTarget = join(work, "saved-cpsat");
const savedCpsat = await call("save_verified_cpsat_python", {
  source: knapsackScript(),
  checker: KNAPSACK_CHECKER,
  problem: KNAPSACK,
  expectation: { objective_sense: "maximize", objective_threshold: 13 },
  target_dir: cpsatTarget,
});
check(savedCpsat.saved === true, "save_verified_cpsat_python", savedCpsat);
const replayed = await call("replay_artifact", { target_dir: cpsatTarget });
check(replayed.reproduced === true, "replay_artifact", replayed);

// The load planner.
const plan = await call("plan_load", { problem: LOADS });
check(typeof plan.result_id === "string" && plan.result?.recommended === "optimised", "plan_load", plan);
const explained = await call("explain_load_plan", { result_id: plan.result_id });
check(explained.check?.ok === true, "explain_load_plan", explained);
const narration = await call("verify_narration", { narration: explained.narration, result_id: plan.result_id });
check(narration.ok === true, "verify_narration", narration);
const savedPlan = await call("save_load_plan", { problem: LOADS, target_dir: join(work, "saved-plan") });
check(savedPlan.status === "saved", "save_load_plan", savedPlan);

// Unsat cores.
// Lines 2 and 3 contradict each other; the domain line is not part of it.
const coreLines = (result) => JSON.stringify(result.core?.map((item) => item.line));
const core = await call("find_unsat_core", { model: UNSAT_MODEL });
check(core.status === "mus_found" && coreLines(core) === "[2,3]", "find_unsat_core", core);
const coreFiles = await call("find_unsat_core_files", { model_path: unsatPath });
check(coreFiles.status === "mus_found" && coreLines(coreFiles) === "[2,3]", "find_unsat_core_files", coreFiles);

// Tables.
const written = await call("write_tabular_result", {
  headers: ["item", "weight"],
  rows: [
    ["a", 3],
    ["b", 4],
  ],
  target_path: tablePath,
});
check(written.rows_written === 2, "write_tabular_result", written);
const table = await call("load_tabular_data", { path: tablePath });
check(JSON.stringify(table.headers) === '["item","weight"]' && table.rows.length === 2, "load_tabular_data", table);

// Equations.
const corrected = await call("correct_values", SEED);
check(corrected.status === "OPTIMAL" && corrected.corrected?.gross_amount === 520, "correct_values", corrected);
const validated = await call("validate_equations", { equations: SEED.equations });
check(validated.valid === true, "validate_equations", validated);
const evaluated = await call("evaluate_equations", {
  equations: SEED.equations,
  values: { gross_amount: 520, quantity: 10, rate_per_pc: 52 },
});
check(evaluated.all_passed === true, "evaluate_equations", evaluated);
const optimised = await call("optimize_expression", OPTIMISATION);
check(optimised.status === "OPTIMAL" && optimised.objective_value === 3500, "optimize_expression", optimised);

// ---- coverage --------------------------------------------------------------

const missed = [...listed].filter((name) => !called.has(name));
check(missed.length === 0, "every listed tool was called", missed);
await client.close();
console.log(`${listed.size} tools listed, ${called.size} called, every result validated against its output schema, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
