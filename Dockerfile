# syntax=docker/dockerfile:1
# Build: docker build -t nanobot .
# Run:   docker run -v nanobot-data:/home/nanobot/.nanobot -p 127.0.0.1:18790:18790 nanobot

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -tags goolm -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/nanobot ./cmd/nanobot

# The agent runs shell commands, so the runtime image keeps a small Debian
# userland (sh, coreutils, git, curl) rather than scratch.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata bash coreutils git curl bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 --shell /bin/bash nanobot
COPY --from=build /out/nanobot /usr/local/bin/nanobot
USER nanobot
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
ENTRYPOINT ["nanobot"]
CMD ["gateway"]
