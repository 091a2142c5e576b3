// The Postgres handle: a kysely instance over a pg Pool, the typed schema it queries, and the
// reachability probe used by /readyz and at startup.
import { type ColumnType, type JSONColumnType, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { UnavailableError } from '../errors.ts';

export interface OrdersTable {
  id: string;
  product_id: string;
  user_id: string;
  quantity: number;
  shard_key: string;
  generation: number;
  shard_index: number;
  // pg returns int8 as a string (it may exceed 2^53); callers convert where they know it fits.
  fencing_token: ColumnType<string, number | string | bigint, never>;
  reserved_at: ColumnType<Date, Date, never>;
  created_at: ColumnType<Date, never, never>;
  /** The per-user limit the order was accepted under (migrations/0003); null in older rows. */
  per_user_limit: ColumnType<number | null, number | null, never>;
  /** confirmed → paid, or expired / cancelled (migrations/0004); set by the lifecycle, not the writer. */
  status: ColumnType<OrderRowStatus, never, OrderRowStatus>;
  /** The payment deadline (server time) of an order of a sale with paymentTimeoutSec; null otherwise. */
  pay_by: ColumnType<Date | null, Date | null, never>;
}

export type OrderRowStatus = 'confirmed' | 'paid' | 'expired' | 'cancelled';

export interface OrderStatusHistoryTable {
  order_id: string;
  status: 'reserved' | OrderRowStatus;
  at: ColumnType<Date, never, never>;
}

/** An order withdrawn before its buyer was answered: it must never become a row of `orders`. */
export interface WithdrawnOrdersTable {
  id: string;
  product_id: string;
  user_id: string;
  quantity: number;
  shard_key: string;
  withdrawn_at: ColumnType<Date, never, never>;
}

export interface AdminAuditTable {
  id: ColumnType<string, never, never>;
  at: ColumnType<Date, never, never>;
  actor: string;
  action: string;
  product_id: string | null;
  // Inserted as JSON text: pg would turn a JS array into a Postgres array literal, not jsonb.
  before: JSONColumnType<object | null, string | null, never>;
  // Set after the change is made (the row is written before it).
  after: JSONColumnType<object | null, string | null, string>;
  request: JSONColumnType<object | null, string | null, never>;
}

export interface SaleLimitsTable {
  product_id: string;
  per_user_limit: number;
  updated_at: ColumnType<Date, never, Date>;
}

export interface Database {
  orders: OrdersTable;
  admin_audit: AdminAuditTable;
  sale_limits: SaleLimitsTable;
  order_status_history: OrderStatusHistoryTable;
  withdrawn_orders: WithdrawnOrdersTable;
}

export interface DatabaseOptions {
  /** Pool size; default 10. */
  max?: number;
  /** How long to wait for a connection before failing, so an unreachable server fails fast; default 5000. */
  connectionTimeoutMillis?: number;
  /** Called when an idle pooled connection dies (e.g. Postgres restarted); default: ignored. */
  onPoolError?: (err: Error) => void;
}

export function createDatabase(url: string, options: DatabaseOptions = {}): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5000,
  });
  // Without a listener, an idle client's error (server restart, network drop) crashes the process.
  pool.on('error', options.onPoolError ?? (() => {}));
  // pg-pool removes its listener while a client is checked out, and kysely adds none: Postgres dying
  // mid-transaction would emit an unhandled 'error'. The query itself still fails and is retried.
  pool.on('connect', (client) => client.on('error', () => {}));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** Throws UnavailableError('Postgres') unless a trivial query round-trips. */
export async function checkDatabase(db: Kysely<Database>): Promise<void> {
  try {
    await sql`select 1`.execute(db);
  } catch (err) {
    throw new UnavailableError('Postgres', err);
  }
}

export { isConnectionError } from '../errors.ts';
