# batchd: the one place that knows how to build, generate, lint and test.
# `make test` is the test command (README, .ci/run).

GO        ?= go
BUF       := web/node_modules/.bin/buf
NPM       ?= npm
BIN       := bin
GOFLAGS_TEST ?= -race -count=1 -timeout 30m

# Node 22 from .ci/setup when the machine's node is older (protoc-gen-es
# 2.17 requires 22), and go-installed tools (grpcurl), first on PATH.
NODE_LOCAL := $(firstword $(wildcard $(CURDIR)/.cache/node/node_modules/node-linux-*/bin))
export PATH := $(if $(NODE_LOCAL),$(NODE_LOCAL):)$(shell $(GO) env GOPATH)/bin:$(PATH)

# The suites `make test` runs, each to the end, in this order.
SUITES := lint checkgenerate checkweb test-go test-web e2e-web fuzz

.PHONY: all build setup generate checkgenerate web checkweb lint deps-direction test test-go test-web e2e-web fuzz bench sim-results clean

all: build

# VERSION is stamped into both binaries (--version): the commit, "-dirty"
# with uncommitted changes, and its time.
VERSION   ?= $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo dev) ($(shell git log -1 --format=%cI 2>/dev/null))
LDFLAGS   := -X 'main.version=$(VERSION)'
# urfave_cli_no_docs leaves out urfave/cli's man-page and Markdown writer
# (and the Markdown parser it initialises at start): 0.6 ms off each start.
GOTAGS    := urfave_cli_no_docs

## build: the two binaries into ./bin (no Node needed: the page is embedded)
build:
	$(GO) build -tags $(GOTAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/batchd ./cmd/batchd
	CGO_ENABLED=0 $(GO) build -tags $(GOTAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/batchctl ./cmd/batchctl

web/node_modules: web/package.json web/package-lock.json
	cd web && $(NPM) install --no-audit --no-fund  # not `npm ci`: this npm omits other platforms' optional packages from the lock and then refuses it
	touch web/node_modules

## generate: Go and TypeScript code from proto/ (local plugins, offline)
generate: web/node_modules
	$(BUF) lint
	$(BUF) generate

## checkgenerate: fail when the committed generated code is stale
checkgenerate: generate
	git diff --exit-code -- proto web/src/gen
	@test -z "$$(git status --porcelain -- proto web/src/gen)" || { git status --porcelain -- proto web/src/gen; echo "generated code is stale: run make generate"; exit 1; }

## web: rebuild the embedded page into web/dist
web: web/node_modules
	cd web && $(NPM) run build

## checkweb: fail when the committed web/dist is stale
checkweb: web
	git diff --exit-code -- web/dist
	@test -z "$$(git status --porcelain -- web/dist)" || { git status --porcelain -- web/dist; echo "web/dist is stale: run make web"; exit 1; }

## setup: install what a fresh machine lacks (chromium, make, gcc, Node 22, grpcurl, node modules); seconds when all is there
setup:
	@bash .ci/setup

## lint: formatting, vet, staticcheck (0 findings), go.mod/go.sum tidy, and the import rules
lint: deps-direction
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	staticcheck ./...
	@$(GO) mod tidy -diff >/dev/null || { $(GO) mod tidy -diff; echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

## deps-direction: the import rules (internal/depcheck, from `go list -deps`; CONTRIBUTING.md lists them)
deps-direction:
	$(GO) run ./internal/depcheck

## test: everything CI runs, after setup: lint, generated code and page up to date, Go tests with -race,
## page tests, browser test, fuzz. Every suite runs even when one fails; the failures are listed at the end.
test: setup
	@passed=0; failed=0; names=""; \
	for s in $(SUITES); do \
	  printf '\n==> make %s (%s)\n' "$$s" "$$(date -u +%H:%M:%S)"; \
	  if $(MAKE) --no-print-directory $$s; then passed=$$((passed+1)); else failed=$$((failed+1)); names="$$names $$s"; fi; \
	done; \
	echo; \
	if [ $$failed -gt 0 ]; then echo "make test: these suites failed:$$names"; fi; \
	echo "suites: $$passed passed, $$failed failed"; \
	test $$failed -eq 0

test-go:
	$(GO) test $(GOFLAGS_TEST) ./...
	@# SQLite's own count of statements planned again at every run (store/reprepare_internal_test.go)
	CGO_CFLAGS=-DSQLITE_ENABLE_STMTVTAB $(GO) test -count=1 -run NoReprepare ./store/

test-web: web/node_modules
	cd web && $(NPM) run check && $(NPM) test

## e2e-web: the page driven in Debian's chromium against a real batchd
e2e-web: build web/node_modules
	cd web && BATCHD_BIN=$(CURDIR)/$(BIN)/batchd $(NPM) run e2e

## fuzz: each fuzz target for FUZZTIME (seed corpora in */testdata/fuzz; a failing input is written there)
# Minimizing each new interesting input may take up to -fuzzminimizetime
# (60 s by default), past -fuzztime: FUZZMINIMIZETIME bounds it. Go's fuzz
# coordinator can miss its own -fuzztime deadline on a loaded machine and
# fail with a bare "context deadline exceeded" and no input written; such a
# run passes when the target's corpus then replays cleanly. Any other
# failure fails.
FUZZTIME         ?= 10s
FUZZMINIMIZETIME ?= 1s
FUZZFLAGS        ?=
FUZZTARGETS      := ./server:FuzzDisclose ./server:FuzzRequest ./server:FuzzCancel ./server:FuzzGetTaskSet \
	./server:FuzzListTaskSets ./server:FuzzGetOutput ./server:FuzzGetBill ./server:FuzzRegister \
	./server:FuzzHeartbeat ./server:FuzzReportFinished ./server:FuzzEnvelope ./store:FuzzDiscloseHash ./store:FuzzDecodeSpec
fuzz:
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; for t in $(FUZZTARGETS); do \
	  pkg=$${t%%:*}; name=$${t#*:}; echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
	  if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $(FUZZFLAGS) $$pkg >$$log 2>&1; then \
	    tail -n 2 $$log; continue; fi; \
	  cat $$log; \
	  if grep -q 'Failing input written' $$log || ! grep -qx '    context deadline exceeded' $$log; then exit 1; fi; \
	  echo "$$name: the fuzz coordinator missed its deadline; replaying the corpus"; \
	  $(GO) test -count=1 -run "^$$name\$$" $$pkg || exit 1; \
	done

## bench: the scheduler and pipeline benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./sched/ ./bench/...

clean:
	rm -rf $(BIN)
