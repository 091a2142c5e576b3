// The CLI's help text (`flashsale --help`), also printed on stderr when no command is given.

export const USAGE = `flashsale — admin CLI for a running flashsale service

Usage:
  flashsale sale put <productId> --stock <n> --shards <n> [sale options]
  flashsale restock <productId> <delta>        add units (negative: remove, never below 0 left)
  flashsale reshard <productId> <shards>       move the remaining stock into <shards> new shards (1-1024)
  flashsale status <productId>                 settings, available, returning, sold (reserved + confirmed + paid), orders, shards, last change
  flashsale reconcile <productId>              check available + returning + sold == total and sold == reserved + confirmed + paid

Sale options (sale put; a put replaces the whole sale, so an option left out is unset):
  --per-user-limit <n>     units one buyer may hold (default: no limit)
  --starts-at <time>       orders before it get 409 not_started (ISO 8601 with a zone: 2026-12-01T10:00:00Z)
  --ends-at <time>         orders after it get 409 sale_ended
  --payment-timeout <s>    seconds a buyer has to pay; unpaid orders expire and their units go back on sale
                           (default: no payment, orders end confirmed)
  --lottery-seconds <n>    buyers arriving in the sale's first <n> seconds (or before it opens) are served
                           in a random order, not first come first served

Options:
  --json            print the service's JSON answer instead of text
  --url <url>       the service (default: $BASE_URL, else http://127.0.0.1:3000)
  --actor <name>    who you are, for the audit trail (default: cli:<user>@<host>)
  -h, --help        this text

Environment:
  ADMIN_TOKEN       the service's admin token (default: the development token of \`npm start\`)
  BASE_URL          the service's base URL

Exit status: 0 done, 1 reconcile found differences, 2 error (printed as "error: <code>: <message>").
Negative deltas may be written directly (restock shoe -5) or after "--" (restock shoe -- -5).
`;
