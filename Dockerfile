# syntax=docker/dockerfile:1.7
# One image for every Toolplane app. The app is chosen by the caller (a Kubernetes Deployment's
# `command`, a compose service's `command`), e.g. `node dist/apps/registry/src/main.js`.
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: install everything, compile TypeScript to dist/, then drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
# --ignore-scripts: no install step may download a binary. The base image already is Node 24 (the
# `node` devDependency only exists to give Node 24 to `npm run` on older hosts, so drop its
# unpopulated bin link), and tree-sitter is used through its .wasm, not a native build. `npm install`,
# not `npm ci`: the lock cannot list every platform build of optional dependencies (see .ci/run).
RUN --mount=type=cache,target=/root/.npm \
    npm install --ignore-scripts && rm -f node_modules/.bin/node
COPY .swcrc tsconfig.base.json tsconfig.json ./
COPY apps ./apps
COPY libs ./libs
COPY tools ./tools
COPY test ./test
RUN npm run build \
 && rm -rf dist/test \
 && test -f dist/apps/registry/src/database/migrate.js \
 && npm prune --omit=dev --ignore-scripts

# ---- runtime: Node 24 + python3, bubblewrap and slirp4netns (runner-local sandboxes tool code), non-root ----
FROM ${NODE_IMAGE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 tini ca-certificates bubblewrap slirp4netns \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 toolplane \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/toolplane --create-home --shell /usr/sbin/nologin toolplane \
 && install -d -o 10001 -g 10001 -m 0700 /etc/toolplane/keys
ENV NODE_ENV=production \
    TOOLPLANE_PROFILE=production \
    LOG_FORMAT=json \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    RUNNER_PYTHON=/usr/bin/python3 \
    RUNNER_WORK_ROOT=/tmp/toolplane-runs
WORKDIR /app
COPY --from=build --chown=root:root /src/package.json ./package.json
COPY --from=build --chown=root:root /src/node_modules ./node_modules
COPY --from=build --chown=root:root /src/dist ./dist
# Numeric user so Kubernetes can verify runAsNonRoot. The code is owned by root: read-only to the app.
USER 10001:10001
EXPOSE 8081 8082 8083 8084
# tini is PID 1: it forwards SIGTERM (graceful drain) and reaps orphaned tool processes.
ENTRYPOINT ["/usr/bin/tini", "--"]
