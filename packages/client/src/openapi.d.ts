// The types of the service's HTTP API, generated from its OpenAPI document (GET /openapi.json) by
// `npm run gen:client-types`: do not edit. CI (`npm run check:client-types`) fails when it is stale.
export interface paths {
    "/api/orders": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Order units of a product
         * @description A 202 means the units are sold to this buyer; every 4xx and a 503 `unavailable` mean nothing was sold. A replayed Idempotency-Key (or Queue-Ticket) answers the first answer again. With `Accept: text/event-stream`, a buyer who must wait gets one 200 stream instead of polling (events `queued`, then `result`: see QueuedEvent and ResultEvent); an order decided at once answers as without it.
         */
        post: operations["placeOrder"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{orderId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An order's status (with BUYER_AUTH jwt or header: its buyer's, or the admin's, only) */
        get: operations["getOrder"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{orderId}/pay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pay an order (before payBy); paying again answers the same
         * @description With PAYMENT_WEBHOOK_SECRET set this is the payment provider's call: it carries X-Payment-Timestamp and X-Payment-Signature.
         */
        post: operations["payOrder"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/orders/{orderId}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel an order: its units go back on sale
         * @description Cancelling again answers the same.
         */
        post: operations["cancelOrder"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/products/{productId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What is left on sale, and when */
        get: operations["getProduct"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/products/{productId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The sale's units, orders and shards */
        get: operations["getSaleStatus"];
        /** Create (201) or replace (200) a sale: `stock` units over `shards` shards */
        put: operations["putSale"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/products/{productId}/restock": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add (or, negative, remove) units; rebalances the shards in a new generation */
        post: operations["restock"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/products/{productId}/reshard": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Spread the units over another number of shards, live */
        post: operations["reshard"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/products/{productId}/reconcile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Check conservation: available + returning + sold == total, Redis against Postgres */
        get: operations["reconcile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/products/{productId}/live": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The live dashboard's data */
        get: operations["live"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process is up */
        get: operations["health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Redis, Postgres and the lock backend are reachable */
        get: operations["ready"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics; with METRICS_PORT set, on that port only (here: 404 not_found) */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/dashboard": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The live ops dashboard (asks for the admin token) */
        get: operations["dashboard"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document */
        get: operations["openapi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/api": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The API reference page, rendered from this document */
        get: operations["apiReference"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description Every error code the service answers (src/http/errors.ts).
         * @enum {string}
         */
        ErrorCode: "invalid_request" | "invalid_encoding" | "non_canonical_path" | "unauthorized" | "unauthenticated" | "invalid_signature" | "buyer_mismatch" | "unknown_product" | "unknown_order" | "not_found" | "method_not_allowed" | "request_timeout" | "body_timeout" | "sold_out" | "not_started" | "sale_ended" | "limit_exceeded" | "insufficient_stock" | "stock_limit_exceeded" | "request_in_progress" | "invalid_ticket" | "queued" | "order_expired" | "order_cancelled" | "already_paid" | "payload_too_large" | "unsupported_media_type" | "headers_too_large" | "idempotency_key_reused" | "busy" | "rate_limited" | "too_many_attempts" | "unavailable" | "outcome_unknown" | "lock_timeout" | "lock_unavailable" | "lock_quorum_unavailable" | "lock_lost" | "lock_not_held" | "lock_upgrade" | "migration_failed" | "internal";
        /** @description `method_not_allowed`: 405 */
        MethodNotAllowedError: {
            /** @constant */
            error: "method_not_allowed";
            message: string;
            /**
             * @description the methods the path has
             * @example GET, HEAD
             */
            allow: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `not_found`: 404 */
        NotFoundError: {
            /** @constant */
            error: "not_found";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description The units are sold to this buyer. */
        PlacedOrder: {
            /**
             * @description the order's id
             * @example drop-1.3.1.k5d8sq2c0a
             */
            orderId: string;
            /** @constant */
            status: "reserved";
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            /**
             * @description the buyer
             * @example alice
             */
            userId: string;
            /** @example 1 */
            quantity: number;
        };
        /** @description `invalid_request`: 400 */
        InvalidRequestError: {
            /** @constant */
            error: "invalid_request";
            message: string;
            /**
             * @description the field refused
             * @example quantity
             */
            field?: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `non_canonical_path`: 400 */
        NonCanonicalPathError: {
            /** @constant */
            error: "non_canonical_path";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `invalid_encoding`: 400 */
        InvalidEncodingError: {
            /** @constant */
            error: "invalid_encoding";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `invalid_ticket`: 400 */
        InvalidTicketError: {
            /** @constant */
            error: "invalid_ticket";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `unauthenticated`: 401 */
        UnauthenticatedError: {
            /** @constant */
            error: "unauthenticated";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `buyer_mismatch`: 403 */
        BuyerMismatchError: {
            /** @constant */
            error: "buyer_mismatch";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `unknown_product`: 404 */
        UnknownProductError: {
            /** @constant */
            error: "unknown_product";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `request_timeout`: 408 */
        RequestTimeoutError: {
            /** @constant */
            error: "request_timeout";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `body_timeout`: 408 */
        BodyTimeoutError: {
            /** @constant */
            error: "body_timeout";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `sold_out`: 409 */
        SoldOutError: {
            /** @constant */
            error: "sold_out";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            /** @constant */
            available: 0;
        } & {
            [key: string]: unknown;
        };
        /** @description `insufficient_stock`: 409 */
        InsufficientStockError: {
            /** @constant */
            error: "insufficient_stock";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            /** @description units left: a request for at most this many can be served */
            available: number;
            /** @description the order's quantity (absent for a restock) */
            quantity?: number;
        } & {
            [key: string]: unknown;
        };
        /** @description `limit_exceeded`: 409 */
        LimitExceededError: {
            /** @constant */
            error: "limit_exceeded";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            limit: number;
        } & {
            [key: string]: unknown;
        };
        /** @description `not_started`: 409 */
        NotStartedError: {
            /** @constant */
            error: "not_started";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            /**
             * Format: date-time
             * @example 2026-12-01T20:00:00.000Z
             */
            startsAt: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `sale_ended`: 409 */
        SaleEndedError: {
            /** @constant */
            error: "sale_ended";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            /**
             * Format: date-time
             * @example 2026-12-01T20:00:00.000Z
             */
            endsAt: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `request_in_progress`: 409 */
        RequestInProgressError: {
            /** @constant */
            error: "request_in_progress";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `payload_too_large`: 413 */
        PayloadTooLargeError: {
            /** @constant */
            error: "payload_too_large";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `unsupported_media_type`: 415 */
        UnsupportedMediaTypeError: {
            /** @constant */
            error: "unsupported_media_type";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `idempotency_key_reused`: 422 */
        IdempotencyKeyReusedError: {
            /** @constant */
            error: "idempotency_key_reused";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `queued`: 429 */
        QueuedError: {
            /** @constant */
            error: "queued";
            message: string;
            /**
             * @description send it back as the Queue-Ticket header
             * @example v1.drop-1.…
             */
            ticket: string;
            /**
             * @description buyers ahead (an estimate)
             * @example 120
             */
            position: number;
            /**
             * @description when the service expects to serve this buyer, ms from now
             * @example 2400
             */
            etaMs: number;
            /**
             * @description come back after this many ms (never sooner)
             * @example 1000
             */
            retryAfterMs: number;
            /**
             * @description units still on sale
             * @example 87
             */
            available: number;
        } & {
            [key: string]: unknown;
        };
        /** @description `busy`: 429 */
        BusyError: {
            /** @constant */
            error: "busy";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId?: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `rate_limited`: 429 */
        RateLimitedError: {
            /** @constant */
            error: "rate_limited";
            message: string;
            /** @enum {string} */
            by: "user" | "address";
        } & {
            [key: string]: unknown;
        };
        /** @description `headers_too_large`: 431 */
        HeadersTooLargeError: {
            /** @constant */
            error: "headers_too_large";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `unavailable`: 503 */
        UnavailableError: {
            /** @constant */
            error: "unavailable";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId?: string;
            /**
             * @description a reservation withdrawn: it never becomes an order
             * @example drop-1.3.1.k5d8sq2c0a
             */
            withdrawnOrderId?: string;
            /** @description units left on a Redis master short of replicas */
            stranded?: number;
        } & {
            [key: string]: unknown;
        };
        /** @description `outcome_unknown`: 503 */
        OutcomeUnknownError: {
            /** @constant */
            error: "outcome_unknown";
            message: string;
            /**
             * @description the id the order has if it exists: GET it
             * @example drop-1.3.1.k5d8sq2c0a
             */
            orderId: string;
        } & {
            [key: string]: unknown;
        };
        OrderView: {
            /**
             * @description the order's id
             * @example drop-1.3.1.k5d8sq2c0a
             */
            orderId: string;
            status: components["schemas"]["OrderStatus"];
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            /**
             * @description the buyer
             * @example alice
             */
            userId: string;
            /** @example 1 */
            quantity: number;
            /**
             * @description the payment deadline (epoch ms, Redis clock), for a sale that needs payment
             * @example 1796241600000
             */
            payBy?: number;
            /**
             * Format: date-time
             * @description the payment deadline (Redis clock), as ISO 8601
             * @example 2026-12-01T20:00:00.000Z
             */
            paymentDueAt?: string;
            /** @description admin only */
            shardKey?: string;
            /** @description admin only */
            generation?: number;
            /** @description admin only */
            shardIndex?: number;
            /** @description admin only: the fencing token of the decrement */
            token?: number;
            /**
             * @description admin only
             * @example 1796241600000
             */
            reservedAt?: number;
            /** @description admin only */
            perUserLimit?: number;
        } & {
            [key: string]: unknown;
        };
        /**
         * @description reserved (in Redis) → confirmed (in Postgres) → paid; or expired / cancelled
         * @enum {string}
         */
        OrderStatus: "reserved" | "confirmed" | "paid" | "expired" | "cancelled";
        /** @description `unknown_order`: 404 */
        UnknownOrderError: {
            /** @constant */
            error: "unknown_order";
            message: string;
            /** @example drop-1.3.1.k5d8sq2c0a */
            orderId: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `too_many_attempts`: 429 */
        TooManyAttemptsError: {
            /** @constant */
            error: "too_many_attempts";
            message: string;
        } & {
            [key: string]: unknown;
        };
        PaidOrder: {
            /**
             * @description the order's id
             * @example drop-1.3.1.k5d8sq2c0a
             */
            orderId: string;
            /** @constant */
            status: "paid";
        };
        /** @description `invalid_signature`: 401 */
        InvalidSignatureError: {
            /** @constant */
            error: "invalid_signature";
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `order_cancelled`: 409 */
        OrderCancelledError: {
            /** @constant */
            error: "order_cancelled";
            message: string;
            /** @example drop-1.3.1.k5d8sq2c0a */
            orderId: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `order_expired`: 409 */
        OrderExpiredError: {
            /** @constant */
            error: "order_expired";
            message: string;
            /** @example drop-1.3.1.k5d8sq2c0a */
            orderId: string;
        } & {
            [key: string]: unknown;
        };
        CancelledOrder: {
            /**
             * @description the order's id
             * @example drop-1.3.1.k5d8sq2c0a
             */
            orderId: string;
            /** @constant */
            status: "cancelled";
        };
        /** @description `already_paid`: 409 */
        AlreadyPaidError: {
            /** @constant */
            error: "already_paid";
            message: string;
            /** @example drop-1.3.1.k5d8sq2c0a */
            orderId: string;
        } & {
            [key: string]: unknown;
        };
        ProductView: {
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            /** @example 87 */
            available: number;
            soldOut: boolean;
            /** @description while buyers wait in the waiting room */
            queue?: {
                waiting: number;
                /** @description how far behind now the line serves; null before anyone is let in */
                servingLagMs: number | null;
                lottery?: {
                    lotterySeconds: number;
                    /** @description SHA-256 of the draw's seed, published before the sale opens */
                    seedSha256: string;
                    /**
                     * Format: date-time
                     * @example 2026-12-01T20:00:00.000Z
                     */
                    closesAt: string;
                    /** @description the seed itself, once the lottery window has closed */
                    seed?: string;
                };
            };
            /**
             * Format: date-time
             * @example 2026-12-01T20:00:00.000Z
             */
            startsAt?: string;
            /**
             * Format: date-time
             * @example 2026-12-01T20:00:00.000Z
             */
            endsAt?: string;
            paymentTimeoutSec?: number;
        };
        Sale: {
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            total: number;
            available: number;
            shards: number;
            generation: number;
            perUserLimit: number | null;
            /**
             * Format: date-time
             * @example 2026-12-01T20:00:00.000Z
             */
            startsAt?: string;
            /**
             * Format: date-time
             * @example 2026-12-01T20:00:00.000Z
             */
            endsAt?: string;
            paymentTimeoutSec?: number;
            queue?: {
                lottery: {
                    [key: string]: unknown;
                };
            } & {
                [key: string]: unknown;
            };
        };
        /** @description `unauthorized`: 401 */
        UnauthorizedError: {
            /** @constant */
            error: "unauthorized";
            message: string;
        } & {
            [key: string]: unknown;
        };
        SaleStatus: {
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            generation: number;
            /** @description null: no limit */
            perUserLimit: number | null;
            total: number;
            available: number;
            sold: number;
            reserved: number;
            confirmed: number;
            paid: number;
            returning: number;
            returned: number;
            orders: {
                paid: number;
                expired: number;
                cancelled: number;
            };
            awaitingPayment: number;
            staleReservations: number;
            shards: ({
                index: number;
                key: string;
                stock: number;
                sold: number;
                /** @constant */
                retired?: true;
                master?: string;
            } & {
                [key: string]: unknown;
            })[];
            /** @description a change journaled and not switched yet */
            pending: {
                [key: string]: unknown;
            } | null;
            failedJobs: {
                count: number;
                scanned: number;
                recent: ({
                    orderId: string;
                    reason: string;
                } & {
                    [key: string]: unknown;
                })[];
            } & {
                [key: string]: unknown;
            };
        } & {
            [key: string]: unknown;
        };
        /** @description `stock_limit_exceeded`: 409 */
        StockLimitExceededError: {
            /** @constant */
            error: "stock_limit_exceeded";
            message: string;
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            total: number;
            max: number;
        } & {
            [key: string]: unknown;
        };
        /** @description the live dashboard's data */
        LiveView: {
            /**
             * @description the product on sale
             * @example drop-1
             */
            productId: string;
            at: number;
            replica: {
                hostname: string;
                pid: number;
            };
            sale: {
                soldOut: boolean;
            } & {
                [key: string]: unknown;
            };
            rates: {
                [key: string]: unknown;
            }[];
            saleHistory: {
                [key: string]: unknown;
            }[];
        } & {
            [key: string]: unknown;
        };
        /**
         * @description each dependency reachable (and the lock backend, by name, when not Redis); the streams held
         * @example {
         *       "redis": true,
         *       "postgres": true,
         *       "streams": {
         *         "held": 12,
         *         "max": 10000
         *       }
         *     }
         */
        Readiness: {
            redis: boolean;
            postgres: boolean;
            etcd?: boolean;
            zookeeper?: boolean;
            /** @description waiting buyers this process holds on event streams, and its bound (WAITING_ROOM_MAX_STREAMS) */
            streams?: {
                held: number;
                max: number;
            };
        };
        /** @description `{error, message, ...details}` */
        ErrorBody: {
            error: components["schemas"]["ErrorCode"];
            message: string;
        } & {
            [key: string]: unknown;
        };
        /** @description `event: queued`: where the buyer stands (at once, then on a change that matters, at most ~1/s) */
        QueuedEvent: {
            /**
             * @description send it back as the Queue-Ticket header
             * @example v1.drop-1.…
             */
            ticket: string;
            /**
             * @description buyers ahead (an estimate)
             * @example 120
             */
            position: number;
            /**
             * @description when the service expects to serve this buyer, ms from now
             * @example 2400
             */
            etaMs: number;
            /**
             * @description units still on sale
             * @example 87
             */
            available: number;
        };
        /** @description `event: result`: the outcome; then the stream ends */
        ResultEvent: {
            /**
             * @description the HTTP status the JSON answer would have had
             * @example 202
             */
            status: number;
            /** @description that JSON answer (a PlacedOrder, or an error body) */
            body: {
                [key: string]: unknown;
            };
        };
    };
    responses: {
        /** @description `method_not_allowed` */
        MethodNotAllowed: {
            headers: {
                /** @description the request's id in the service's logs */
                "X-Request-Id"?: string;
                /** @description the methods the path has */
                Allow: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["MethodNotAllowedError"];
            };
        };
        /** @description `not_found` */
        NotFound: {
            headers: {
                /** @description the request's id in the service's logs */
                "X-Request-Id"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["NotFoundError"];
            };
        };
        /** @description any refusal of a path or method without an operation here: e.g. an /admin path asked without the token (401 before 404) */
        Refused: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorBody"];
            };
        };
        /** @description an unexpected error (a bug: logged with the request); nothing is known to have changed */
        Internal: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorBody"];
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    placeOrder: {
        parameters: {
            query?: never;
            header?: {
                /** @description retries with the same key and body answer the same, for 24 h */
                "Idempotency-Key"?: string;
                /** @description the ticket of an earlier `queued` answer: keeps the place */
                "Queue-Ticket"?: string;
                /** @description `text/event-stream`: wait on one streamed answer instead of polling */
                Accept?: "application/json" | "text/event-stream";
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    productId: string;
                    userId: string;
                    /** @default 1 */
                    quantity?: number;
                };
            };
        };
        responses: {
            /** @description the buyer must wait: a stream of `queued` events, then one `result` */
            200: {
                headers: {
                    /** @description the buyer's ticket: come back with it */
                    "Queue-Ticket": string;
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description the order: its units are sold to this buyer */
            202: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PlacedOrder"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path`, `invalid_encoding`, `invalid_ticket` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"] | components["schemas"]["InvalidEncodingError"] | components["schemas"]["InvalidTicketError"];
                };
            };
            /** @description `unauthenticated` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthenticatedError"];
                };
            };
            /** @description `buyer_mismatch` */
            403: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BuyerMismatchError"];
                };
            };
            /** @description `unknown_product` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownProductError"];
                };
            };
            /** @description `request_timeout`, `body_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"] | components["schemas"]["BodyTimeoutError"];
                };
            };
            /** @description `sold_out`, `insufficient_stock`, `limit_exceeded`, `not_started`, `sale_ended`, `request_in_progress` */
            409: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SoldOutError"] | components["schemas"]["InsufficientStockError"] | components["schemas"]["LimitExceededError"] | components["schemas"]["NotStartedError"] | components["schemas"]["SaleEndedError"] | components["schemas"]["RequestInProgressError"];
                };
            };
            /** @description `payload_too_large` */
            413: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description `unsupported_media_type` */
            415: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description `idempotency_key_reused` */
            422: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description `queued`, `busy`, `rate_limited` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    /** @description with `queued`: the ticket */
                    "Queue-Ticket"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueuedError"] | components["schemas"]["BusyError"] | components["schemas"]["RateLimitedError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable`, `outcome_unknown` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"] | components["schemas"]["OutcomeUnknownError"];
                };
            };
        };
    };
    getOrder: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the order's id */
                orderId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the order; the admin sees its internals too */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrderView"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `unauthenticated` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthenticatedError"];
                };
            };
            /** @description `unknown_order` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownOrderError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `too_many_attempts` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TooManyAttemptsError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    payOrder: {
        parameters: {
            query?: never;
            header?: {
                /** @description unix seconds, within 5 minutes (webhook mode) */
                "X-Payment-Timestamp"?: string;
                /** @description sha256=<hex HMAC-SHA256 over "<timestamp>.<raw body>"> (webhook mode) */
                "X-Payment-Signature"?: string;
            };
            path: {
                /** @description the order's id */
                orderId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    userId: string;
                };
            };
        };
        responses: {
            /** @description paid */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaidOrder"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path`, `invalid_encoding` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"] | components["schemas"]["InvalidEncodingError"];
                };
            };
            /** @description `unauthenticated`, `invalid_signature` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthenticatedError"] | components["schemas"]["InvalidSignatureError"];
                };
            };
            /** @description `buyer_mismatch` */
            403: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BuyerMismatchError"];
                };
            };
            /** @description `unknown_order` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownOrderError"];
                };
            };
            /** @description `request_timeout`, `body_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"] | components["schemas"]["BodyTimeoutError"];
                };
            };
            /** @description `order_cancelled`, `order_expired` */
            409: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrderCancelledError"] | components["schemas"]["OrderExpiredError"];
                };
            };
            /** @description `payload_too_large` */
            413: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description `unsupported_media_type` */
            415: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description `busy` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BusyError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    cancelOrder: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the order's id */
                orderId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    userId: string;
                };
            };
        };
        responses: {
            /** @description cancelled */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CancelledOrder"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path`, `invalid_encoding` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"] | components["schemas"]["InvalidEncodingError"];
                };
            };
            /** @description `unauthenticated` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthenticatedError"];
                };
            };
            /** @description `buyer_mismatch` */
            403: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BuyerMismatchError"];
                };
            };
            /** @description `unknown_order` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownOrderError"];
                };
            };
            /** @description `request_timeout`, `body_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"] | components["schemas"]["BodyTimeoutError"];
                };
            };
            /** @description `already_paid`, `order_expired` */
            409: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AlreadyPaidError"] | components["schemas"]["OrderExpiredError"];
                };
            };
            /** @description `payload_too_large` */
            413: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description `unsupported_media_type` */
            415: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description `busy` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BusyError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getProduct: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the product on sale */
                productId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the product */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProductView"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `unknown_product` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownProductError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    getSaleStatus: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the product on sale */
                productId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the status */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SaleStatus"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `unauthorized` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description `unknown_product` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownProductError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `too_many_attempts`, `busy` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TooManyAttemptsError"] | components["schemas"]["BusyError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    putSale: {
        parameters: {
            query?: never;
            header?: {
                /** @description a label for the audit row: 1-64 of [A-Za-z0-9_.:@ -], anything else left out */
                "X-Admin-Actor"?: string;
            };
            path: {
                /** @description the product on sale */
                productId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    stock: number;
                    shards: number;
                    perUserLimit?: number | null;
                    startsAt?: string | null;
                    endsAt?: string | null;
                    paymentTimeoutSec?: number | null;
                    queue?: {
                        lotterySeconds?: number;
                    } | null;
                    note?: string;
                };
            };
        };
        responses: {
            /** @description replaced */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Sale"];
                };
            };
            /** @description created */
            201: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Sale"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path`, `invalid_encoding` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"] | components["schemas"]["InvalidEncodingError"];
                };
            };
            /** @description `unauthorized` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description `request_timeout`, `body_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"] | components["schemas"]["BodyTimeoutError"];
                };
            };
            /** @description `payload_too_large` */
            413: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description `unsupported_media_type` */
            415: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description `too_many_attempts`, `busy` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TooManyAttemptsError"] | components["schemas"]["BusyError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    restock: {
        parameters: {
            query?: never;
            header?: {
                /** @description a label for the audit row: 1-64 of [A-Za-z0-9_.:@ -], anything else left out */
                "X-Admin-Actor"?: string;
            };
            path: {
                /** @description the product on sale */
                productId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    delta: number;
                    note?: string;
                };
            };
        };
        responses: {
            /** @description the new totals */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description the product on sale
                         * @example drop-1
                         */
                        productId: string;
                        delta: number;
                        total: number;
                        available: number;
                        generation: number;
                    };
                };
            };
            /** @description `invalid_request`, `non_canonical_path`, `invalid_encoding` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"] | components["schemas"]["InvalidEncodingError"];
                };
            };
            /** @description `unauthorized` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description `unknown_product` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownProductError"];
                };
            };
            /** @description `request_timeout`, `body_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"] | components["schemas"]["BodyTimeoutError"];
                };
            };
            /** @description `insufficient_stock`, `stock_limit_exceeded` */
            409: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InsufficientStockError"] | components["schemas"]["StockLimitExceededError"];
                };
            };
            /** @description `payload_too_large` */
            413: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description `unsupported_media_type` */
            415: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description `too_many_attempts`, `busy` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TooManyAttemptsError"] | components["schemas"]["BusyError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    reshard: {
        parameters: {
            query?: never;
            header?: {
                /** @description a label for the audit row: 1-64 of [A-Za-z0-9_.:@ -], anything else left out */
                "X-Admin-Actor"?: string;
            };
            path: {
                /** @description the product on sale */
                productId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    shards: number;
                    note?: string;
                };
            };
        };
        responses: {
            /** @description the new shards */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description the product on sale
                         * @example drop-1
                         */
                        productId: string;
                        shards: number;
                        generation: number;
                        available: number;
                    };
                };
            };
            /** @description `invalid_request`, `non_canonical_path`, `invalid_encoding` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"] | components["schemas"]["InvalidEncodingError"];
                };
            };
            /** @description `unauthorized` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description `unknown_product` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownProductError"];
                };
            };
            /** @description `request_timeout`, `body_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"] | components["schemas"]["BodyTimeoutError"];
                };
            };
            /** @description `payload_too_large` */
            413: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description `unsupported_media_type` */
            415: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description `too_many_attempts`, `busy` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TooManyAttemptsError"] | components["schemas"]["BusyError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    reconcile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the product on sale */
                productId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the checks */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        ok: boolean;
                        differences: {
                            check: string;
                            expected: number;
                            found: number;
                            detail: string;
                        }[];
                        available: number;
                        sold: number;
                        total: number;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `unauthorized` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description `unknown_product` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownProductError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `too_many_attempts`, `busy` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TooManyAttemptsError"] | components["schemas"]["BusyError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    live: {
        parameters: {
            query?: {
                /** @description epoch ms: leave out older history */
                since?: string;
            };
            header?: never;
            path: {
                /** @description the product on sale */
                productId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the live view */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LiveView"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `unauthorized` */
            401: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description `unknown_product` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnknownProductError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `too_many_attempts` */
            429: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TooManyAttemptsError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description `unavailable` */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    /** @description whole seconds to wait before retrying */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description up */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        status: "ok";
                    };
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
        };
    };
    ready: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description ready */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Readiness"];
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
            /** @description not ready: the false ones are not reachable */
            503: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Readiness"];
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus metrics; with METRICS_PORT set, on that port only (here: 404 not_found) */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `not_found` */
            404: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
        };
    };
    dashboard: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The live ops dashboard (asks for the admin token) */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
        };
    };
    openapi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the OpenAPI 3.1 document */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        openapi: string;
                        paths: {
                            [key: string]: unknown;
                        };
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
        };
    };
    apiReference: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The API reference page, rendered from this document */
            200: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description `invalid_request`, `non_canonical_path` */
            400: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvalidRequestError"] | components["schemas"]["NonCanonicalPathError"];
                };
            };
            /** @description `request_timeout` */
            408: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RequestTimeoutError"];
                };
            };
            /** @description `headers_too_large` */
            431: {
                headers: {
                    /** @description the request's id in the service's logs */
                    "X-Request-Id"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HeadersTooLargeError"];
                };
            };
        };
    };
}
