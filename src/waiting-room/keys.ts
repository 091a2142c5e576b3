// The waiting room's Redis keys: one hash per product line, in the product's slot (`{P}`), so a
// line's counts and its serving point change in one script.

/** `queue:{P}`: the serving point, the admission rate, and first requests per time bucket. */
export const lineKey = (productId: string) => `queue:{${productId}}`;
