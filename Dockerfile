# syntax=docker/dockerfile:1
# Build:  docker build -t nanobot .
# Multi-arch (the build stage runs on the builder's platform and
#         cross-compiles; no emulation needed):
#         docker buildx build --platform linux/amd64,linux/arm64 -t nanobot .
# With Chromium for the browser tool:
#         docker build --target browser -t nanobot:browser .
# Run:    docker run -v nanobot-data:/home/nanobot/.nanobot -p 127.0.0.1:18790:18790 nanobot
# docs/install.md#container lists the volume and the environment variables.

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
# Set by buildx for each platform of --platform.
ARG TARGETOS TARGETARCH TARGETVARIANT
ARG VERSION=dev COMMIT="" DATE=""
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-amd64} GOARM=${TARGETVARIANT#v} \
    go build -tags goolm -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/nanobot ./cmd/nanobot

# The agent runs shell commands, so the runtime image keeps a small Debian
# userland (sh, coreutils, git, curl) rather than scratch.
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata bash coreutils git curl bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --shell /bin/bash nanobot
COPY --from=build /out/nanobot /usr/local/bin/nanobot
ARG VERSION=dev
LABEL org.opencontainers.image.title="nanobot" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.source="https://github.com/nanobot-go/nanobot"
USER 10001:10001
WORKDIR /home/nanobot
# Config, workspace, sessions and state all live under this folder.
VOLUME ["/home/nanobot/.nanobot"]
# Inside the container the gateway must listen beyond loopback for the
# published port to work; publish it on the host's loopback only.
ENV NANOBOT_GATEWAY__HOST=0.0.0.0
# The OpenAI-compatible API needs a key beyond loopback: it is off in the
# image until you set api.apiKey and NANOBOT_API__ENABLED=true (docs/api.md).
ENV NANOBOT_API__ENABLED=false
EXPOSE 18790
# Ready: every enabled channel connected and the inbox and outbox writable.
# A cluster's channels standby reports not ready by design (docs/cluster.md);
# run it with --no-healthcheck or read /healthz instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD curl -fsS http://127.0.0.1:18790/readyz || exit 1
ENTRYPOINT ["nanobot"]
CMD ["gateway"]

# The same image with Chromium and fonts for the browser tool
# (docs/tools.md#browser: it finds chromium on PATH), and Node.js for npm
# MCP servers. Chromium's own sandbox needs user namespaces for uid 10001
# (docker run --security-opt seccomp=unconfined, or a runtime that allows
# them). About 400 MB more. Build it with --target browser.
FROM runtime AS browser
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-liberation fonts-noto-color-emoji fonts-noto-cjk nodejs npm \
 && rm -rf /var/lib/apt/lists/*
ENV CHROME_BIN=/usr/bin/chromium
USER 10001:10001

# The default target: the image without Chromium.
FROM runtime
