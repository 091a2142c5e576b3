// Background housekeeping loops (the outbox sweeper, the admin-change recovery): one run at a time,
// the next one `intervalMs` after the previous ended, and close() waits for the run in progress so
// shutdown never cuts one in half. The task handles its own errors.

export interface Periodic {
  close(): Promise<void>;
}

export function every(intervalMs: number, task: () => Promise<void>): Periodic {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let closed = false;
  const tick = () => {
    running = task().finally(() => {
      if (!closed) timer = setTimeout(tick, intervalMs);
    });
  };
  timer = setTimeout(tick, intervalMs);
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}
