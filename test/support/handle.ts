// A stand-in for an object a suite's `before` hook creates: a helper that registers the hooks can
// hand it out at once, and the tests use it as if it were the object itself.

/** Forwards every property read to what `get` returns; reading one before it exists throws. */
export function handle<T extends object>(what: string, get: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_, key) {
      const target = get();
      // Not a thenable: `await` and Promise.resolve() look for `then` and must not throw.
      if (target === undefined && key === 'then') return undefined;
      if (target === undefined) throw new Error(`${what} is used before the suite's before() hook made it`);
      return Reflect.get(target, key);
    },
  });
}
