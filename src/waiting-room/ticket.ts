// Waiting-room tickets: signed, self-contained proof of a buyer's place in a product's line (product,
// buyer, first-seen time on Redis' clock), checked with no Redis round trip by every API process.
import { hash, timingSafeEqual } from 'node:crypto';
import { InvalidTicketError } from './errors.ts';

/** What a ticket proves. */
export interface Ticket {
  productId: string;
  userId: string;
  /** The buyer's first request, ms on Redis' clock: the place in the line. */
  firstSeen: number;
  /** The signature, unique per ticket: the ticket's idempotency identity. */
  id: string;
  /** The ticket as presented: what issue() gives for the same place (signing is deterministic). */
  header: string;
}

const VERSION = 't1';
/** A ticket is refused this long after its first request: nobody waits in a line for longer. */
export const TICKET_LIFETIME_MS = 2 * 60 * 60 * 1000;
/** A header longer than this is malformed (a product id of 64, a buyer id of 128, the rest fixed). */
const MAX_LENGTH = 400;
/** 128 bits of HMAC-SHA256, base64url. */
const SIGNATURE_LENGTH = 22;
/** SHA-256's block size: HMAC pads (or first hashes) its key to it (RFC 2104). */
const BLOCK_BYTES = 64;

/**
 * Issues and checks tickets with HMAC-SHA256 under QUEUE_SECRET, shared by every API process of a
 * deployment. The format is `t1.<productId>.<base64url buyer>.<firstSeen base36>.<signature>`: the
 * product id alphabet has no dot, so the fields split unambiguously.
 *
 * @example
 * const signer = new TicketSigner(secret);
 * const header = signer.issue('shoe', 'alice', clock.now());
 * signer.verify(header, 'shoe', 'alice', clock.now()); // → { firstSeen, id, ... } or InvalidTicketError
 */
export class TicketSigner {
  /** The key padded and XORed with HMAC's inner and outer pads, once: each signature is two hashes. */
  private readonly innerPad: Buffer;
  private readonly outerPad: Buffer;

  constructor(secret: string) {
    if (secret.length === 0) throw new Error('QUEUE_SECRET is empty');
    const raw = Buffer.from(secret);
    const key = Buffer.alloc(BLOCK_BYTES);
    (raw.length > BLOCK_BYTES ? hash('sha256', raw, 'buffer') : raw).copy(key);
    this.innerPad = Buffer.from(key.map((b) => b ^ 0x36));
    this.outerPad = Buffer.from(key.map((b) => b ^ 0x5c));
  }

  issue(productId: string, userId: string, firstSeen: number): string {
    const body = `${VERSION}.${productId}.${Buffer.from(userId).toString('base64url')}.${firstSeen.toString(36)}`;
    return `${body}.${this.sign(body)}`;
  }

  /** The ticket, if it is genuine, unexpired and names this product and buyer; else InvalidTicketError. */
  verify(header: string, productId: string, userId: string, now: number): Ticket {
    const ticket = this.parse(header);
    if (ticket.productId !== productId) throw new InvalidTicketError('the ticket is for another product');
    if (ticket.userId !== userId) throw new InvalidTicketError('the ticket is for another buyer');
    if (now - ticket.firstSeen > TICKET_LIFETIME_MS) throw new InvalidTicketError('the ticket has expired');
    return ticket;
  }

  private parse(header: string): Ticket {
    const parts = header.length <= MAX_LENGTH ? header.split('.') : [];
    const [version, productId, user, seen, signature] = parts;
    if (parts.length !== 5 || version !== VERSION || !productId || !user || !seen || !signature) {
      throw new InvalidTicketError('the ticket is malformed');
    }
    const expected = Buffer.from(this.sign(header.slice(0, header.lastIndexOf('.'))));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new InvalidTicketError('the ticket is not genuine');
    }
    return {
      productId,
      userId: Buffer.from(user, 'base64url').toString(),
      firstSeen: Number.parseInt(seen, 36),
      id: signature,
      header,
    };
  }

  /**
   * HMAC-SHA256 (RFC 2104) with node's one-shot hash: no Hmac object per ticket. Under a herd's
   * queued answers, creating that object was the costliest step of a ticket (profiled: 6 % of the
   * API's CPU, more than the hashing itself).
   */
  private sign(body: string): string {
    const inner = hash('sha256', Buffer.concat([this.innerPad, Buffer.from(body)]), 'buffer');
    const outer = hash('sha256', Buffer.concat([this.outerPad, inner]), 'base64url');
    return outer.slice(0, SIGNATURE_LENGTH);
  }
}
