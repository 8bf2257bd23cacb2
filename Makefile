# ql3 — one Makefile for the whole go.work workspace.
# `make run` starts the edge binary; `make test` runs every test (see README).

MODULES    := core controlplane worker edge httpkit notifykit panel panel/browsertest migrations scripts subfetch qlsource
GO         ?= go
FUZZTIME   ?= 3s
LONGFUZZ   ?= 2m
BENCHTIME  ?= 1s
DATA_DIR   ?= ./data
LISTEN     ?= 127.0.0.1:5700
VERSION    ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -s -w -X main.version=$(VERSION)
# Every module's packages: one go command over the whole workspace lets go
# schedule packages of all modules together (-p = CPUs) instead of waiting
# for each module's slowest package in turn.
PKGS       := $(foreach m,$(MODULES),./$(m)/...)

.PHONY: all build build-edge build-control build-worker test vet fmt-check unit fuzz-smoke fuzz bench cross run cluster clean

all: build

build: build-edge build-control build-worker

# The edge speaks HTTP/1.1 only, as the worker does (EDGE_TAGS drops net/http's
# HTTP/2 from the binary: about 0.5 MiB of its 16 MiB budget, ADR 0059).
EDGE_TAGS ?= nethttpomithttp2
build-edge:
	@mkdir -p bin
	cd edge && CGO_ENABLED=0 $(GO) build -trimpath -tags '$(EDGE_TAGS)' -ldflags '$(LDFLAGS)' -o ../bin/ql3-edge ./cmd/ql3-edge

build-control:
	@mkdir -p bin
	cd controlplane && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o ../bin/ql3-control ./cmd/ql3-control

build-worker:
	@mkdir -p bin
	cd worker && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o ../bin/ql3-worker ./cmd/ql3-worker

# test: formatting, vet, every module's tests, then a short run of every fuzz target.
test: fmt-check vet unit fuzz-smoke

fmt-check:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@echo "== vet $(MODULES)"
	$(GO) vet $(PKGS)

# -count=1: test results are never taken from go's cache, even core's,
# whose dependency test runs `go list` (files the cache does not track);
# compiled packages are cached as always.
unit:
	@echo "== test $(MODULES)"
	$(GO) test -count=1 -timeout 20m $(PKGS)

# fuzz-smoke: every fuzz target for FUZZTIME with real executions (bounded
# minimisation), packages in parallel up to the CPU count; prints a table of
# executions per target (scripts/fuzz.sh).
fuzz-smoke:
	GO=$(GO) ./scripts/fuzz.sh $(FUZZTIME)

fuzz:
	GO=$(GO) ./scripts/fuzz.sh $(LONGFUZZ)

bench:
	cd core && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

# Static worker builds for the routers and boards it ships to, stripped
# (-s -w) and without the HTTP/2 client (the ingress speaks HTTP/1.1 over
# one kept-alive TLS 1.3 connection). Prints a size table and fails when a
# binary exceeds WORKER_MAX_BYTES (7.5 MiB; goals: mipsle ≤ 7 MiB, arm v7
# ≤ 6.5 MiB, ADR 0020).
WORKER_MAX_BYTES ?= 7864320
WORKER_TAGS      ?= nethttpomithttp2
cross:
	@mkdir -p dist
	@cd worker && for t in linux/amd64 linux/arm64 linux/arm/7 linux/arm/5 linux/mipsle/softfloat linux/mips/softfloat; do \
		os=$${t%%/*}; rest=$${t#*/}; arch=$${rest%%/*}; sub=$${rest#*/}; [ "$$sub" = "$$rest" ] && sub=""; \
		out=../dist/ql3-worker-$$os-$$arch$${sub:+-$$sub}; \
		case $$arch in arm) env="GOARM=$$sub";; mips|mipsle) env="GOMIPS=$$sub";; *) env="";; esac; \
		env CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $$env $(GO) build -trimpath -tags '$(WORKER_TAGS)' -ldflags '$(LDFLAGS)' -o $$out ./cmd/ql3-worker || exit 1; \
	done
	@printf '%-40s %12s %9s\n' binary bytes MiB; fail=0; \
	for f in dist/ql3-worker-*; do \
		n=$$(wc -c < $$f); printf '%-40s %12d %9.2f\n' $$(basename $$f) $$n $$(awk "BEGIN{print $$n/1048576}"); \
		if [ $$n -gt $(WORKER_MAX_BYTES) ]; then echo "  ^ larger than $(WORKER_MAX_BYTES) bytes"; fail=1; fi; \
	done; exit $$fail

run: build-edge
	./bin/ql3-edge serve --data-dir $(DATA_DIR) --listen $(LISTEN)

# cluster: PostgreSQL, two ql3-control replicas, two ql3-worker (node
# profile, mTLS with a dev PKI) and a task firing every 5 s; ^C stops all
# of it (scripts/cluster.sh).
cluster: build-control build-worker
	./scripts/cluster.sh

clean:
	rm -rf bin dist
