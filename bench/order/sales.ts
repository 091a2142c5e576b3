// Sales for the order benchmarks through the admin API: create one (stock, shards, optional start),
// and sell one out by ordering until it answers sold_out.
import { admin, call } from '../../harness/service.ts';

/** Creates (or re-creates) `productId`; `startsAt` (ISO) puts its opening in the future. */
export async function createSale(
  url: string,
  productId: string,
  stock: number,
  shards: number,
  startsAt?: string,
): Promise<void> {
  const r = await call(url, 'PUT', `/admin/products/${productId}`, { stock, shards, startsAt }, admin);
  if (r.status !== 201 && r.status !== 200)
    throw new Error(`cannot create ${productId}: ${r.status} ${JSON.stringify(r.body)}`);
}

/** Orders on `productId` from `clients` buyers at once until it answers sold out. */
export async function sellOut(
  url: string,
  productId: string,
  clients: number,
): Promise<{ accepted: number; other: Record<string, number> }> {
  let accepted = 0;
  let soldOut = false;
  const other: Record<string, number> = {};
  await Promise.all(
    Array.from({ length: clients }, async (_, w) => {
      for (let n = 0; !soldOut; n++) {
        const r = await call(url, 'POST', '/api/orders', {
          productId,
          userId: `d-sellout-${w}-${n}`,
          quantity: 1,
        });
        if (r.status === 202) accepted += 1;
        else if (r.status === 409 && r.body.error === 'sold_out') soldOut = true;
        else other[r.status] = (other[r.status] ?? 0) + 1;
      }
    }),
  );
  return { accepted, other };
}
