// Types of the part of node-zookeeper-client (pure-JS ZooKeeper client, ships none) the ZooKeeper lock uses.
declare module 'node-zookeeper-client' {
  import type { EventEmitter } from 'node:events';

  export class State {
    readonly name: string;
    readonly code: number;
    static readonly DISCONNECTED: State;
    static readonly SYNC_CONNECTED: State;
    static readonly EXPIRED: State;
    static readonly AUTH_FAILED: State;
    static readonly CONNECTED_READ_ONLY: State;
  }

  export class Event {
    static readonly NODE_CREATED: number;
    static readonly NODE_DELETED: number;
    static readonly NODE_DATA_CHANGED: number;
    static readonly NODE_CHILDREN_CHANGED: number;
    getType(): number;
    getPath(): string;
  }

  export class Exception extends Error {
    static readonly CONNECTION_LOSS: number;
    static readonly OPERATION_TIMEOUT: number;
    static readonly SESSION_EXPIRED: number;
    static readonly NO_NODE: number;
    static readonly NODE_EXISTS: number;
    static readonly NOT_EMPTY: number;
    getCode(): number;
  }

  export const CreateMode: {
    readonly PERSISTENT: number;
    readonly EPHEMERAL: number;
    readonly PERSISTENT_SEQUENTIAL: number;
    readonly EPHEMERAL_SEQUENTIAL: number;
  };

  export interface Stat {
    czxid: Buffer;
    mzxid: Buffer;
    ctime: Buffer;
    version: number;
    numChildren: number;
    ephemeralOwner: Buffer;
  }

  export type Callback<T> = (error: Exception | Error | null, value: T) => void;
  export type Watcher = (event: Event) => void;

  export interface ClientOptions {
    sessionTimeout?: number;
    spinDelay?: number;
    retries?: number;
  }

  /** One op's result in a multi: a create's path, a setData's stat. */
  export interface OpResult {
    type: number;
    path?: string;
    stat?: Stat;
  }

  export interface Transaction {
    create(path: string, data: Buffer | null, mode: number): Transaction;
    setData(path: string, data: Buffer | null, version: number): Transaction;
    commit(callback: Callback<OpResult[]>): void;
  }

  export interface Client extends EventEmitter {
    transaction(): Transaction;
    connect(): void;
    close(): void;
    getState(): State;
    getSessionId(): Buffer;
    getSessionTimeout(): number;
    create(path: string, data: Buffer | null, mode: number, callback: Callback<string>): void;
    mkdirp(path: string, callback: Callback<string>): void;
    remove(path: string, version: number, callback: (error: Exception | Error | null) => void): void;
    exists(path: string, watcher: Watcher | undefined, callback: Callback<Stat | null>): void;
    getChildren(path: string, watcher: Watcher | undefined, callback: Callback<string[]>): void;
    getData(path: string, watcher: Watcher | undefined, callback: Callback<Buffer>): void;
  }

  export function createClient(connectionString: string, options?: ClientOptions): Client;
}
