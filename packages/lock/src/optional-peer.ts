// Loads an optional peer dependency (etcd3, node-zookeeper-client) when its backend is first used, so
// Redis-only users install neither; a missing one fails with one line naming the package to install.

/** An optional peer dependency a backend needs is not installed (a setup error, not a lock outcome). */
export class PeerMissingError extends Error {
  readonly code = 'peer_missing';
  override name = 'PeerMissingError';
}

/** The module `load` imports, or PeerMissingError when `name` is not installed. */
export async function loadPeer<T>(name: string, backend: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    const missing = e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(`'${name}'`);
    if (!missing) throw err;
    throw new PeerMissingError(`the ${backend} lock needs the package ${name}: npm install ${name}`, {
      cause: err,
    });
  }
}
