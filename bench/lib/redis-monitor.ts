// Which Redis commands the service sends, by owner: a MONITOR sample counts every command (those run
// inside Lua scripts included) and those touching BullMQ's keys, which INFO commandstats cannot split.
import { Socket } from 'node:net';
import { decodeResp, encodeCommand, RespError } from '../../harness/resp.ts';

export interface CommandSample {
  /** Every command the server ran during the sample (scripts' inner calls included). */
  total: number;
  /** Commands with a `bull:` key among their arguments (BullMQ's queue). */
  bull: number;
}

/** A running MONITOR sample: counting starts when MONITOR is acknowledged and ends at stop(). */
export interface MonitorSample {
  stop(): CommandSample;
}

/** MONITOR failed, or its connection closed, before the sample ended. */
export class MonitorError extends Error {
  readonly code = 'bench_monitor_failed';
  override name = 'MonitorError';
}

/**
 * Starts a MONITOR sample on the Redis at 127.0.0.1:`port`; resolves once MONITOR answered +OK. MONITOR
 * slows the server: use it on a run whose speed is not reported. `onError` hears a failure after
 * that (the connection lost mid-sample): the sample is then incomplete and stop() throws.
 *
 * Why a raw socket and not ioredis' `redis.monitor()` (ioredis 5.11.1): ioredis switches a monitor
 * connection to its "monitoring" state only in a promise continuation after MONITOR's +OK
 * (redis/event_handler.js readyHandler). When the server is busy, monitor lines arrive in the same
 * socket read as the +OK; the parser hands them over before that continuation has run, so
 * DataHandler.handleMonitorReply lets them through as replies, shiftCommand finds no command waiting
 * and emits "Command queue state error ... Last reply: <a monitor line>" as 'error'. The first such
 * error rejects monitor() (its once('error') listener is then spent), the next one finds no listener
 * and kills the process: phase 2a's crash, in two runs of three. Here the socket sends MONITOR and
 * nothing else, so every reply after the +OK is a monitor line; there is no queue to get out of step.
 *
 * Not the cause of last round's auto-pipelining crash (`TypeError: results[i] is not iterable`), which
 * needs no MONITOR: an auto-pipeline is a Pipeline created on the tick's first command, and a Pipeline
 * copies the client's scripts when it is created. A script that `typedScript.run(client)` defines
 * lazily, on its first call, after another command opened the tick's auto-pipeline, is missing from
 * that pipeline: `pipeline[name]` throws "pipeline[functionName] is not a function" after its callback
 * was queued, so exec has one result fewer than callbacks and `...results[i]` throws in ioredis'
 * exec callback, uncaught (autoPipelining.js executeAutoPipeline). Defining every script on each
 * connection before its first command removes it.
 */
export function startMonitor(port: number, onError: (err: Error) => void): Promise<MonitorSample> {
  return new Promise((resolve, reject) => {
    const sample: CommandSample = { total: 0, bull: 0 };
    const socket = new Socket();
    let pending: Buffer = Buffer.alloc(0);
    let acknowledged = false;
    let failure: Error | undefined;
    const fail = (err: Error) => {
      if (failure) return;
      failure = err instanceof MonitorError ? err : new MonitorError(`MONITOR sample failed: ${err.message}`);
      socket.destroy();
      if (acknowledged) onError(failure);
      else reject(failure);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new MonitorError('MONITOR connection closed before the sample ended')));
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let at = 0;
      for (let reply = decodeResp(pending, at); reply; reply = decodeResp(pending, at)) {
        at = reply.end;
        if (reply.value instanceof RespError)
          return fail(new MonitorError(`MONITOR: ${reply.value.message}`));
        if (!acknowledged) {
          acknowledged = true;
          resolve({ stop });
          continue;
        }
        sample.total += 1;
        // Arguments are quoted and escaped (no raw quote inside one): a key argument starts ` "bull:`.
        if (String(reply.value).includes(' "bull:')) sample.bull += 1;
      }
      pending = pending.subarray(at);
    });
    const stop = (): CommandSample => {
      if (failure) throw failure;
      failure = new MonitorError('MONITOR sample already stopped');
      socket.destroy();
      return { ...sample };
    };
    socket.connect(port, '127.0.0.1', () => socket.write(encodeCommand(['MONITOR'])));
  });
}
