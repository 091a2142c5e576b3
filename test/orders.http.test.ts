// The order path over HTTP under a storm: 2,000 concurrent orders for 500 units over 8 shards sell
// exactly the stock, one row per accepted order, nothing left reserved.
import { describe, it } from 'node:test';
import { orderStorm } from './support/storm.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

describe('order path over HTTP', () => {
  it('2,000 concurrent orders for 500 units over 8 shards: exactly 500 accepted, 500 rows, 0 left', async () => {
    await orderStorm(svc, infra);
  });
});
