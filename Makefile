# Shortcuts for building and releasing; the tests and CI run from .ci/run.
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
GORELEASER_VERSION ?= v2.17.0
# Platforms to leave out of `make build` (docs/install.md), e.g.
# OMIT="whatsapp matrix xmpp": each adds the build tag nanobot_omit_<name>.
OMIT ?=
comma := ,
space := $(subst ,, )
TAGS := $(subst $(space),$(comma),$(strip goolm $(addprefix nanobot_omit_,$(OMIT))))

.PHONY: build crossbuild release-snapshot goreleaser

# The release build of this machine's platform, into ./nanobot.
build:
	CGO_ENABLED=0 $(GO) build -tags $(TAGS) -trimpath -ldflags "$(LDFLAGS)" -o nanobot ./cmd/nanobot

# Every release target (the list in .goreleaser.yaml), into dist/crossbuild.
crossbuild:
	scripts/crossbuild.sh -o dist/crossbuild

# The release archives, checksums and SBOMs in dist/, without publishing.
# The SBOMs need syft on PATH; without it they are skipped.
release-snapshot: goreleaser
	$(GORELEASER) release --snapshot --clean $(if $(shell command -v syft),,--skip=sbom)

GORELEASER := $(shell command -v goreleaser 2>/dev/null || echo $(shell $(GO) env GOPATH)/bin/goreleaser)
goreleaser:
	@command -v $(GORELEASER) >/dev/null 2>&1 || $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
