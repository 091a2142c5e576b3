// Globals the k6 runtime provides that @types/k6 does not declare. Only what the scripts use,
// so the type-check catches a call the runtime would not have (the DOM lib would hide that).
declare global {
  const console: {
    log(...args: unknown[]): void;
    info(...args: unknown[]): void;
    warn(...args: unknown[]): void;
    error(...args: unknown[]): void;
    debug(...args: unknown[]): void;
  };
}

export {};
