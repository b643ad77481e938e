// Compiles every tool's input and output schema from a tools/list result
// (a JSON file named on the command line) with Ajv's JSON Schema 2020-12
// validator in strict mode. Only the standard formats are known (through
// ajv-formats), so a non-standard one such as "uint64" fails to compile.
// Prints one line per problem and exits 1 if there is any.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const listing = JSON.parse(readFileSync(process.argv[2], "utf8"));
const tools = listing.tools ?? [];
let problems = 0;
let compiled = 0;
for (const tool of tools) {
  for (const kind of ["inputSchema", "outputSchema"]) {
    const schema = tool[kind];
    if (schema === undefined) continue;
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    try {
      ajv.compile(schema);
      compiled += 1;
    } catch (error) {
      problems += 1;
      console.log(`${tool.name} ${kind}: ${error.message}`);
    }
  }
}
if (tools.length === 0) {
  console.log("no tools in the listing");
  problems += 1;
}
console.log(`${compiled} schemas compiled, ${problems} failed`);
process.exit(problems === 0 ? 0 : 1);
