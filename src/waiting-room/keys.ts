// The waiting room's Redis keys, in the product's slot (`{P}`): a line's counts and its serving point
// change in one script, and its lottery draw sits beside them.

/** `queue:{P}`: the serving point, the admission rate, and first requests per time bucket. */
export const lineKey = (productId: string) => `queue:{${productId}}`;

/** `queue:{P}:draw`: the lottery window (opensAt, closesAt) and its seed, with the seed's SHA-256. */
export const drawKey = (productId: string) => `queue:{${productId}}:draw`;
