# syntax=docker/dockerfile:1
# migration-controller image: compiled JavaScript on Node.js 24, production dependencies only, non-root.
#   docker build -t ghcr.io/cozystack/cozystack/migration-controller:0.1.0 .
ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: the whole toolchain, then tsc → dist/ ---------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Full install (dev dependencies included: typescript, and the `node` devDependency npm scripts use).
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- production dependencies only, without install scripts -------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
# Numeric, non-root: the restricted Pod Security Standard (runAsNonRoot) can only verify a numeric UID.
# The same UID/GID as the chart's securityContext; nothing in the image is writable by it.
USER 65532:65532
# 9443 admission webhook, 8080 metrics, 8081 health probes (src/config.ts defaults).
EXPOSE 9443 8080 8081
ENTRYPOINT ["node", "dist/main.js"]
