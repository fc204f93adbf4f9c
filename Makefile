# engram: `make` lists the targets. `make test` and `make run` set up their own
# PostgreSQL + pgvector first (scripts/devdb.sh), so they work on a fresh machine.

DATABASE_URL      ?= postgres://postgres@127.0.0.1:5432/engram?sslmode=disable
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/engram_test?sslmode=disable
TEST_TIMEOUT      ?= 25m
TEST_FLAGS        ?= -race -count=1
FUZZTIME          ?= 1m
# Every fuzz target, as package:Target; make fuzz runs them one at a time.
FUZZ_TARGETS      ?= ./ingest/:FuzzPrepare ./server/:FuzzReadLine ./server/:FuzzDecodeRecord \
	./server/:FuzzTimeParams ./schemas/:FuzzDecode ./schemas/:FuzzValidate ./policy/:FuzzRedactString \
	./policy/:FuzzRedactValue ./policy/:FuzzParse ./store/:FuzzCursor
ARGS              ?=
# What --version prints: the nearest tag and the commit (git describe).
VERSION           ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS           := -X github.com/engram-dev/engram/internal/version.Version=$(VERSION)

export DATABASE_URL TEST_DATABASE_URL
export PATH := $(PATH):/usr/local/go/bin

.DEFAULT_GOAL := help
.PHONY: help db browser clients build test test-ha run demo eval schema migrate bench fuzz lint clean screenshots

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

db: ## Make sure PostgreSQL, pgvector and the engram databases are there
	@bash scripts/devdb.sh

browser: ## Make sure headless Chromium is there for the console's browser tests (apt-get when missing)
	@bash scripts/browser.sh

clients: ## Make sure the real clients are there: MCP's TypeScript SDK and Inspector for mcpserver's tests, ajv for openwop's (npm ci when missing)
	@bash scripts/clients.sh

build: ## Build the binaries into bin/ (their --version: VERSION, default git describe)
	go build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

test: db browser clients ## Run all tests (race detector) against TEST_DATABASE_URL, the console's in headless Chromium, MCP's with real clients, OpenWOP's answers through ajv
	ENGRAM_REQUIRE_BROWSER=1 ENGRAM_REQUIRE_CLIENTS=1 go test $(TEST_FLAGS) -timeout=$(TEST_TIMEOUT) ./...

test-ha: ## Build a primary, a synchronous replica and PgBouncer (transaction and session mode) on ports 5441/5442/6441, run the pooler, replica-lag, point-in-time restore and failover scenarios with their figures, tear down
	bash scripts/ha.sh

screenshots: db browser ## Screenshot each console page into docs/console/ (and empty/, demo/, large/: three states), by the console's browser tests
	ENGRAM_REQUIRE_BROWSER=1 ENGRAM_SCREENSHOTS=$(CURDIR)/docs/console go test -count=1 -timeout 20m -run '^TestConsole(Screenshots)?$$' ./console/

# The console's Learning page draws the curves make eval writes (once it has,
# no restart needed); ENGRAM_CONSOLE_EVAL_REPORT= turns that off.
run: db ## Run engramd against DATABASE_URL, migrating first (extra flags: ARGS=...)
	ENGRAM_CONSOLE_EVAL_REPORT="$${ENGRAM_CONSOLE_EVAL_REPORT-$(CURDIR)/docs/eval/curve.json}" go run ./cmd/engramd run --migrate $(ARGS)

demo: db build ## Watch an agent learn: a short world against engramd set up as make run does, then what it learned
	bin/engram-eval demo --database-url "$(DATABASE_URL)" $(ARGS)

eval: db build ## Measure learning: the full simulated world, engram against two controls; writes docs/eval/ (flags: ARGS=...)
	bin/engram-eval run --database-url "$(TEST_DATABASE_URL)" $(ARGS)

schema: db ## Write migrations/schema.sql again from what the migrations build (after adding a migration)
	ENGRAM_WRITE_SCHEMA=1 go test ./migrations -run '^TestSchemaIsCurrent$$' -count=1

migrate: db ## Apply the database migrations to DATABASE_URL
	go run ./cmd/engramd migrate $(ARGS)

bench: db ## Run the benchmark suite: figures, targets and floors into docs/bench/report.md (ARGS='--size full': report-full.md; --events N, --only ingest, ...)
	go run ./scripts/bench $(ARGS)

fuzz: ## Run every fuzz target for FUZZTIME (default 1m) each, one after another, on one core
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "== $$name ($$pkg), $(FUZZTIME)"; \
		go test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -parallel=1 $$pkg; \
	done

lint: ## golangci-lint: gofmt, vet, staticcheck, errcheck, unused, and depguard holding the package layering (installs the pinned linter into bin/tools once)
	@bash scripts/lint.sh

clean: ## Remove bin/
	rm -rf bin/
