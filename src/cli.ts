// The operator's CLI (`npx flashsale …`, `npm run admin -- …`): sale setup, restock, reshard, status
// and reconcile against a RUNNING service, over its admin HTTP API — so every change takes the same
// locks and writes the same audit row as any other admin call. Of the service's code it imports only
// the development admin token (src/config/load.ts), which it sends when ADMIN_TOKEN is unset.
//
// Exit codes: 0 done; 1 reconcile found differences; 2 anything went wrong (usage, server, network),
// reported as one line on stderr: `error: <code>: <message>`.

import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from './cli/args.ts';
import { CliError } from './cli/cli-error.ts';
import { type CliIo, context } from './cli/client.ts';
import { command } from './cli/commands.ts';
import { oneLine } from './cli/output.ts';
import { USAGE } from './cli/usage.ts';

export type { CliIo } from './cli/client.ts';

const defaultIo: CliIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  env: process.env,
  fetch: (...args) => fetch(...args),
};

/** Runs one command line (without `node` and the script); resolves to the exit status. */
export async function main(argv: string[], io: CliIo = defaultIo): Promise<number> {
  try {
    return await run(argv, io);
  } catch (err) {
    const [code, message] =
      err instanceof CliError
        ? [err.code, err.message]
        : ['internal', err instanceof Error ? err.message : String(err)];
    io.err(`error: ${code}: ${oneLine(message)}\n`);
    return 2;
  }
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const line = parseCommandLine(argv);
  if (line.help) {
    io.out(USAGE);
    return 0;
  }
  if (line.positionals.length === 0) {
    io.err(USAGE);
    return 2;
  }
  const runCommand = command(line.positionals, line.sale);
  return runCommand(context(line, io));
}

/** True when this module is the program (tsx src/cli.ts), not imported (bin/flashsale.js, tests). */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) process.exitCode = await main(process.argv.slice(2));
