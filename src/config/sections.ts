// Every setting, grouped into the section its component receives (config.redis, config.writer, ...):
// each field names its environment variable, bounds and default here, and nowhere else (DESIGN.md §6).
import { resolve } from 'node:path';
import { z } from 'zod';
import {
  clusterNodes,
  httpEndpoints,
  int,
  intIn,
  numberIn,
  oneOf,
  processCount,
  rateLimit,
  trustProxy,
  url,
  urlWith,
  type Variable,
  variable,
} from './env-schema.ts';
import { BUYER_AUTH_MODES, publicKeyPem, secret } from './security.ts';

/** MAX_ORDER_QUANTITY's default; the OpenAPI document states it (src/http/openapi/document.ts). */
export const DEFAULT_MAX_ORDER_QUANTITY = 100;

/**
 * The sections, by name. Numbers are integers within the bounds shown; an empty value means "not
 * set". A new section is one more entry here (its type follows: `Config['<name>']`); a check across
 * fields, or a secret required outside a development run (like ADMIN_TOKEN), goes in load.ts.
 */
export const SECTIONS = {
  redis: {
    /** Redis for stock, locks and the order queue. Default `redis://127.0.0.1:6379`. */
    url: variable('REDIS_URL', urlWith('redis://127.0.0.1:6379', ['redis', 'rediss'])),
    /**
     * Seed nodes `host:port,...` of a Redis Cluster: when set, everything runs on the cluster (with
     * REDIS_URL as well it is a configuration error). Unset: the single Redis of REDIS_URL.
     */
    clusterNodes: variable('REDIS_CLUSTER_NODES', clusterNodes()),
    /**
     * Replicas that must have an accepted order's reservation before its 202 (Redis WAIT); 0 answers
     * without waiting (a failover may then lose the newest acknowledged orders). Default 0, 0..16.
     */
    waitReplicas: variable('REDIS_WAIT_REPLICAS', int(0, 0, 16)),
    /** Longest WAIT for those replicas; an order not replicated in time answers 503. Default 500, 1..60000. */
    waitTimeoutMs: variable('REDIS_WAIT_TIMEOUT_MS', int(500, 1, 60_000)),
  },
  postgres: {
    /** Postgres for orders and the audit log. Default `postgres://postgres@127.0.0.1:5432/postgres`. */
    url: variable('DATABASE_URL', url('postgres://postgres@127.0.0.1:5432/postgres')),
  },
  http: {
    /** HTTP port (API; the worker's /metrics). 0 picks a free port. Default 3000. */
    port: variable('PORT', int(3000, 0, 65535)),
    /** Address the HTTP server binds to. Default `0.0.0.0`. */
    host: variable('HOST', z.string().default('0.0.0.0')),
    /** API processes sharing PORT (node:cluster); `auto`: one per core. The writer stays one process. */
    apiWorkers: variable('API_WORKERS', processCount('1')),
    /**
     * Proxies whose X-Forwarded-For is believed (Express `trust proxy`): `false` (none: the client
     * address is the socket's), or a comma list of addresses, CIDRs and loopback/linklocal/uniquelocal.
     */
    trustProxy: variable('TRUST_PROXY', trustProxy()),
    /** Largest quantity one order may ask for. Default 100, 1..1000000. */
    maxOrderQuantity: variable('MAX_ORDER_QUANTITY', int(DEFAULT_MAX_ORDER_QUANTITY, 1, 1_000_000)),
    /** Longest a client may take to send a request's headers (slowloris). Default 12000, 100..60000. */
    headersTimeoutMs: variable('HTTP_HEADERS_TIMEOUT_MS', int(12_000, 100, 60_000)),
    /** Longest a client may take to send a whole request; above headersTimeoutMs (load.ts). Default 30000. */
    requestTimeoutMs: variable('HTTP_REQUEST_TIMEOUT_MS', int(30_000, 200, 600_000)),
    /**
     * Longest a request's body may take to arrive once its headers have (a trickled body is cut with
     * 408 and the connection closed); below requestTimeoutMs (load.ts). Default 5000, 100..600000.
     */
    bodyTimeoutMs: variable('HTTP_BODY_TIMEOUT_MS', int(5000, 100, 600_000)),
    /** How often the server looks for connections past those timeouts. Default 1000, 50..30000. */
    connectionsCheckMs: variable('HTTP_CONNECTIONS_CHECK_MS', int(1000, 50, 30_000)),
    /** Open connections per client address (TRUST_PROXY peers and loopback exempt); 0: no cap. Default 256. */
    maxConnectionsPerAddress: variable('HTTP_MAX_CONNECTIONS_PER_ADDRESS', int(256, 0, 100_000)),
    /** Serve GET /metrics on this port (and not on the API port). Unset: /metrics on the API port (PORT). */
    metricsPort: variable('METRICS_PORT', intIn(0, 65535).optional()),
    /**
     * Address METRICS_PORT binds to (e.g. `127.0.0.1` or a private interface, so that /metrics is
     * not on the API's public address). Unset: HOST.
     */
    metricsHost: variable('METRICS_HOST', z.string().min(1).optional()),
  },
  /** What kind of run this is: the secrets a process requires depend on it (load.ts). */
  mode: {
    /** `production` (any case) is never a development run (load.ts). Default `development`. */
    nodeEnv: variable('NODE_ENV', z.string().default('development')),
    /** `1`: a local run (`npm start`), which may use well-known development secrets (not in production). */
    devRun: variable(
      'FLASHSALE_DEV_RUN',
      z
        .string()
        .optional()
        .transform((v) => v === '1'),
    ),
    /**
     * Where a development run keeps the private redis-server and embedded PostgreSQL it starts when
     * nothing answers at the default REDIS_URL / DATABASE_URL (src/boot/dev). Default `.dev` (git-ignored).
     */
    devDataDir: variable(
      'FLASHSALE_DEV_DATA',
      z
        .string()
        .default('.dev')
        .transform((v) => resolve(v)),
    ),
  },
  admin: {
    /** Bearer token of the admin endpoints; required unless FLASHSALE_DEV_RUN=1 (see load.ts). */
    token: variable('ADMIN_TOKEN', z.string().optional()),
    /** Wrong admin tokens per client address: `<per second>:<burst>` or `off`; past it, 429 without a look at the token. */
    failedAttempts: variable('ADMIN_AUTH_FAILURES', rateLimit('0.1:10')),
  },
  /** Who the buyer is (DESIGN.md §4 "Buyer identity"). */
  buyer: {
    /**
     * `jwt` (the `sub` of an `Authorization: Bearer` JWT), `header` (`X-Buyer-Id` from a TRUST_PROXY
     * peer) or `none` (the body's userId, trusting every caller). Required outside a development
     * run; a development run defaults to `none` (load.ts).
     */
    auth: variable('BUYER_AUTH', oneOf(BUYER_AUTH_MODES).optional()),
  },
  /** The keys of buyer JWTs (BUYER_AUTH=jwt): exactly one of secret and publicKeyPem (load.ts). */
  buyerJwt: {
    /** HS256 key (at least 32 characters). */
    secret: variable('BUYER_JWT_SECRET', secret(32)),
    /** PEM (SPKI) public key: RS256 for an RSA key, ES256 for a P-256 key. */
    publicKeyPem: variable('BUYER_JWT_PUBLIC_KEY', publicKeyPem()),
    /** Expected `iss`; unset: not checked. */
    issuer: variable('BUYER_JWT_ISSUER', z.string().max(512).optional()),
    /** Expected `aud`; unset: not checked. */
    audience: variable('BUYER_JWT_AUDIENCE', z.string().max(512).optional()),
    /** Clock skew tolerated on `exp`/`nbf`/`iat`, seconds. Default 30, 0..300. */
    clockSkewSeconds: variable('BUYER_JWT_CLOCK_SKEW_S', int(30, 0, 300)),
  },
  payments: {
    /**
     * HMAC-SHA256 key shared with the payment provider: when set, POST /api/orders/:id/pay must carry
     * X-Payment-Timestamp and X-Payment-Signature (at least 32 characters).
     */
    webhookSecret: variable('PAYMENT_WEBHOOK_SECRET', secret(32)),
  },
  log: {
    /** pino level; `debug` logs every order. Default `info`. */
    level: variable(
      'LOG_LEVEL',
      oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    ),
  },
  locks: {
    /**
     * The lock service that guards the shard decrements: `redis` (the stock's own Redis, one round
     * trip per order), `etcd` or `zookeeper` (their fencing tokens checked by the shard script). Default redis.
     */
    backend: variable('LOCK_BACKEND', oneOf(['redis', 'etcd', 'zookeeper']).default('redis')),
    /** etcd endpoints `http(s)://host:port,...` (LOCK_BACKEND=etcd). Default `http://127.0.0.1:2379`. */
    etcdEndpoints: variable('ETCD_ENDPOINTS', httpEndpoints('http://127.0.0.1:2379')),
    /** ZooKeeper connect string `host:port,...[/chroot]` (LOCK_BACKEND=zookeeper). Default `127.0.0.1:2181`. */
    zookeeperConnect: variable(
      'ZOOKEEPER_CONNECT',
      z
        .string()
        .default('127.0.0.1:2181')
        .refine((v) => /^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*(\/[^\s]*)?$/.test(v), {
          message: 'must be host:port[,host:port...][/chroot]',
        }),
    ),
    /** Lease of a shard lock held for one decrement (explicit: the critical section is one round trip). Default 5000, 100..600000. */
    leaseMs: variable('LOCK_LEASE_MS', int(5000, 100, 600_000)),
    /** How long an order waits for a busy shard's lock before answering 429. Default 2000, 0..60000. */
    waitMs: variable('LOCK_WAIT_MS', int(2000, 0, 60_000)),
  },
  /** This process's view of the sales (Catalog). */
  catalog: {
    /**
     * A sold-out verdict older than this lets one order through to read the shards again (the rest
     * keep the fast path), so a lost "units back" event costs at most this long. Default 1000, 0: never.
     */
    soldOutRecheckMs: variable('SOLD_OUT_RECHECK_MS', int(1000, 0, 3_600_000)),
  },
  /** The hand-off of accepted orders to the writer (HandOff). */
  handOff: {
    /** Orders one API process sends to the writer in one BullMQ job at most. Default 64, 1..1000. */
    maxBatch: variable('HANDOFF_MAX_BATCH', int(64, 1, 1000)),
    /** Longest an accepted order waits for others to share its job (adds to its answer's latency). Default 2 ms, 0..1000. */
    maxWaitMs: variable('HANDOFF_MAX_WAIT_MS', int(2, 0, 1000)),
  },
  /** The writer (OrderWriter): these bounds are the writer's only ones. */
  writer: {
    /** Jobs the writer holds at once (the upper bound of a batch). Default 256, 1..10000. */
    concurrency: variable('WRITER_CONCURRENCY', int(256, 1, 10_000)),
    /** Rows per INSERT. Default 128, 1..5000 (Postgres' 65535 parameters fit 5957 rows). */
    batchSize: variable('WRITER_BATCH_SIZE', int(128, 1, 5000)),
    /** Longest a job waits for its batch to fill. Default 5 ms, 1..10000. */
    batchMaxWaitMs: variable('WRITER_BATCH_MS', int(5, 1, 10_000)),
    /**
     * BullMQ job lock: a killed writer's jobs are retaken within about WRITER_LOCK_MS +
     * WRITER_STALLED_INTERVAL_MS. Default 10000, 1000..600000: under a second, a long GC pause or a
     * Redis hiccup would lose a healthy writer its jobs.
     */
    lockDurationMs: variable('WRITER_LOCK_MS', int(10_000, 1000, 600_000)),
    /** How often each writer looks for jobs whose lock lapsed (each check reads the active list). Default 5000, 100..600000. */
    stalledIntervalMs: variable('WRITER_STALLED_INTERVAL_MS', int(5000, 100, 600_000)),
  },
  /** The order lifecycle's periodic work: sweeper, admin-change recovery, expiry, reconcile. */
  lifecycle: {
    /** Reservations older than this with no Postgres row are re-enqueued by the sweeper; admin changes pending longer are finished. Default 5000. */
    sweepAgeMs: variable('SWEEP_AGE_MS', int(5000, 100, 3_600_000)),
    /** Period of the sweeper and the admin-change recovery. Default 2000. */
    sweepIntervalMs: variable('SWEEP_INTERVAL_MS', int(2000, 100, 3_600_000)),
    /** The worker's periodic reconcile of every sale (flashsale_reconcile_differences); 0 switches it off. */
    reconcileIntervalMs: variable('RECONCILE_INTERVAL_MS', int(30_000, 0, 3_600_000)),
    /**
     * Period of the expiry sweep (worker: every sale; API: the timed sales it has seen): unpaid orders
     * past their deadline expire, returned units go back on sale, decided fates reach Postgres. Default 1000.
     */
    expiryIntervalMs: variable('EXPIRY_INTERVAL_MS', int(1000, 10, 3_600_000)),
  },
  shutdown: {
    /** Graceful-stop budget on SIGTERM/SIGINT. Default 10000, 0..600000. */
    timeoutMs: variable('SHUTDOWN_TIMEOUT_MS', int(10_000, 0, 600_000)),
  },
  /** Per-process rate limits of orders (OrderGate): `<per second>:<burst>` or `off`. */
  rateLimits: {
    /** Orders per buyer (userId) in each API process. */
    perUser: variable('RATE_LIMIT_PER_USER', rateLimit('off')),
    /** Orders per client address in each API process. */
    perAddress: variable('RATE_LIMIT_PER_IP', rateLimit('off')),
  },
  /** The waiting room of the API processes (src/waiting-room): who waits for capacity, in order. */
  waitingRoom: {
    /** `on`: under excess demand, orders are answered 429 queued and admitted first come, first served; `off`: 429 busy. */
    enabled: variable(
      'WAITING_ROOM',
      oneOf(['on', 'off'])
        .default('on')
        .transform((v) => v === 'on'),
    ),
    /**
     * The key that signs waiting-room tickets, shared by every API process of a deployment (at least
     * 32 characters); required outside a development run while WAITING_ROOM is on (see load.ts).
     */
    secret: variable('QUEUE_SECRET', z.string().optional()),
    /**
     * Streams (`Accept: text/event-stream`) each API process holds for waiting buyers; past it a
     * waiting buyer gets 429 queued and polls. Each is an open connection and a file descriptor: keep
     * it under the process's open-file limit, with room for the other connections. 0: no streams.
     */
    maxStreams: variable('WAITING_ROOM_MAX_STREAMS', int(10_000, 0, 1_000_000)),
  },
  /** Admission control (src/http/admission.ts): the adaptive limit of orders in flight per process. */
  admission: {
    initialLimit: variable('ADMISSION_LIMIT', int(128, 1, 100_000)),
    minLimit: variable('ADMISSION_MIN_LIMIT', int(8, 1, 100_000)),
    maxLimit: variable('ADMISSION_MAX_LIMIT', int(1024, 1, 100_000)),
    /** An admitted order slower than this is a congestion signal (the limit is cut). */
    targetMs: variable('ADMISSION_TARGET_MS', int(200, 1, 600_000)),
    /** Longest wait for a slot in a burst; 0: no waiting at all. */
    queueMs: variable('ADMISSION_QUEUE_MS', int(1000, 0, 600_000)),
    /** Longest wait once the queue has stood for ADMISSION_QUEUE_MS (sustained overload). */
    overloadQueueMs: variable('ADMISSION_OVERLOAD_QUEUE_MS', int(50, 0, 600_000)),
    maxQueue: variable('ADMISSION_MAX_QUEUE', int(1000, 0, 1_000_000)),
    /** Mean event-loop delay above which nothing waits for a slot; 0: not watched. */
    maxLagMs: variable('ADMISSION_MAX_LAG_MS', int(100, 0, 60_000)),
    /** Event-loop utilization (0..1) at or above which a herd (refusals >= completions) cuts the limit; 0: not watched. */
    maxUtilization: variable('ADMISSION_MAX_UTILIZATION', numberIn(0.9, 0, 1)),
  },
} satisfies Record<string, Record<string, Variable>>;

/** The values of a section's variables, parsed. */
type Parsed<S extends Record<string, Variable>> = { [F in keyof S]: z.output<S[F]['schema']> };

/** Every section as parsed from the environment, before the checks across fields (load.ts). */
export type ParsedSections = { [N in keyof typeof SECTIONS]: Parsed<(typeof SECTIONS)[N]> };

export type ModeSection = ParsedSections['mode'];
export type HttpSection = ParsedSections['http'];
export type BuyerJwtSection = ParsedSections['buyerJwt'];
export type PaymentsSection = ParsedSections['payments'];
export type RedisSection = ParsedSections['redis'];
export type LocksSection = ParsedSections['locks'];
export type HandOffSection = ParsedSections['handOff'];
export type WriterSection = ParsedSections['writer'];
export type LifecycleSection = ParsedSections['lifecycle'];
