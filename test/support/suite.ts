// Suite lifecycles: private infrastructure (and the service on it) started before the enclosing suite
// and stopped after it; handles returned at once, everything else started through setup() (ordered).
import { after, before } from 'node:test';
import {
  type Infra,
  NO_LOAD_SHEDDING,
  type Service,
  startInfra,
  startService,
} from '../../harness/service.ts';
import { handle } from './handle.ts';

interface Stoppable {
  stop(): Promise<unknown>;
}

export interface InfraSuite {
  infra: Infra;
  /**
   * Runs `fn` in the suite's before hook, once the infrastructure and earlier setups are up (Node 20
   * runs a file's top-level before hooks concurrently: a hook of its own could not count on them).
   */
  setup(fn: () => Promise<void>): void;
  /** Stops `started` after the suite, before the infrastructure (the last one registered first). */
  stopFirst<T extends Stoppable>(started: T): T;
}

export interface ServiceSuite extends InfraSuite {
  /** API + writer + sweeper in this process (startService). */
  svc: Service;
}

/** A private Redis and a fresh Postgres database for the enclosing suite. */
export function useInfra(): InfraSuite {
  let infra: Infra | undefined;
  const setups: Array<() => Promise<void>> = [];
  const started: Stoppable[] = [];
  before(async () => {
    infra = await startInfra(NO_LOAD_SHEDDING);
    for (const fn of setups) await fn();
  });
  after(async () => {
    for (const s of started.splice(0).reverse()) await s.stop();
    await infra?.stop();
  });
  return {
    infra: handle('infra', () => infra),
    setup(fn) {
      setups.push(fn);
    },
    stopFirst(s) {
      started.push(s);
      return s;
    },
  };
}

/** useInfra() and the service on it, started with `env` on top of the infrastructure's. */
export function useService(env: Record<string, string> = {}): ServiceSuite {
  const suite = useInfra();
  let svc: Service | undefined;
  suite.setup(async () => {
    svc = suite.stopFirst(await startService(suite.infra, env));
  });
  return { ...suite, svc: handle('svc', () => svc) };
}
