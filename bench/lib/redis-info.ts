// Server-side command accounting from INFO commandstats (counts include commands run inside Lua
// scripts: an EVALSHA whose script makes three calls adds evalsha=1 plus those three).
import type { Redis } from 'ioredis';

export type CommandCounts = Record<string, number>;

/** Parses `INFO commandstats` into { command: calls } (subcommands like `client|setname` kept as is). */
export function parseCommandStats(info: string): CommandCounts {
  const counts: CommandCounts = {};
  for (const line of info.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m?.[1] && m[2]) counts[m[1]] = Number(m[2]);
  }
  return counts;
}

export async function commandStats(redis: Redis): Promise<CommandCounts> {
  return parseCommandStats(await redis.info('commandstats'));
}

/** after - before per command, dropping zero deltas and the commands listed in `exclude`. */
export function diffCommandStats(
  before: CommandCounts,
  after: CommandCounts,
  exclude: readonly string[] = ['info'],
): CommandCounts {
  const delta: CommandCounts = {};
  for (const [cmd, calls] of Object.entries(after)) {
    if (exclude.includes(cmd)) continue;
    const d = calls - (before[cmd] ?? 0);
    if (d !== 0) delta[cmd] = d;
  }
  return delta;
}

export async function redisVersion(redis: Redis): Promise<string> {
  const info = await redis.info('server');
  return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
}

/** CPU seconds (user + system, all threads) the server has used since it started. */
export async function serverCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? Number.NaN);
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? Number.NaN);
  return user + sys;
}
