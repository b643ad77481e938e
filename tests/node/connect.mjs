// One way the Node scripts start the server under test: `solvergate stdio --toolset full`
// with this process's environment, its stderr passed through, through the TypeScript SDK.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export async function connect(binary, name) {
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: binary,
      args: ["stdio", "--toolset", "full"],
      env: Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)),
      stderr: "inherit",
    }),
  );
  return client;
}
