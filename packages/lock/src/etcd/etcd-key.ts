// An owner's place in an etcd lock queue: its key and create revision (the FIFO order and the fencing
// token). A module of its own so the public types never import etcd3's (an optional peer).

/** A key this client created: its name and create revision (the fencing token). */
export interface EtcdKey {
  key: string;
  revision: number;
}
