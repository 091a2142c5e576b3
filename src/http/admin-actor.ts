// Who made an admin change, for its audit row: the holder of ADMIN_TOKEN at the client address (what
// was authenticated), plus the caller's X-Admin-Actor only as a label, marked as a claim.
import type { Request } from 'express';

/** A label short and plain enough to keep as it is; anything else is left out. */
const LABEL = /^[A-Za-z0-9_.:@ -]{1,64}$/;

/** e.g. `admin-token@10.0.0.7 label:alice` (the label is what the caller says, not checked). */
export function adminActor(req: Request): string {
  const who = `admin-token@${req.ip ?? 'unknown'}`;
  const label = req.get('x-admin-actor');
  return label !== undefined && LABEL.test(label) ? `${who} label:${label}` : who;
}
