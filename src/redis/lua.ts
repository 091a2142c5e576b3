// Registers Lua scripts on an ioredis connection once (defineCommand: EVALSHA with a transparent
// EVAL fallback after a script flush), so every module ships its scripts as .lua files and calls them
// as typed commands on clients and pipelines alike.
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

export interface LuaScript {
  /** Command name added to the connection and its pipelines. */
  name: string;
  numberOfKeys: number;
  source: string;
}

/**
 * A script from its file; `libs` (files of shared local functions) are prepended, so the script stays
 * one self-contained EVAL.
 */
export function luaScript(name: string, numberOfKeys: number, file: URL, libs: URL[] = []): LuaScript {
  return { name, numberOfKeys, source: [...libs, file].map((f) => readFileSync(f, 'utf8')).join('\n') };
}

export function defineScripts(redis: Redis, scripts: readonly LuaScript[]): void {
  for (const s of scripts) {
    if (typeof (redis as unknown as Record<string, unknown>)[s.name] === 'function') continue;
    redis.defineCommand(s.name, { numberOfKeys: s.numberOfKeys, lua: s.source });
  }
}

/** Integer replies arrive as numbers (RESP2/RESP3 integers) or numeric strings (Lua string results). */
export function replyInt(reply: unknown): number {
  const n =
    typeof reply === 'number'
      ? reply
      : typeof reply === 'string' && reply !== ''
        ? Number(reply)
        : Number.NaN;
  if (!Number.isInteger(n)) throw new TypeError(`expected an integer reply, got ${JSON.stringify(reply)}`);
  return n;
}
