# The mailer kit's tasks. `make check` is what CI runs (through .ci/run) and
# what every commit must pass.
GO ?= go
PKGS := ./...

.PHONY: all generate check lint lint-install size fmt vet gen-check test codes test-short fuzz bench bench-redis bench-postgres demo

all: check

## generate: write gen/ and docs/codes.md from schema/
generate:
	$(GO) generate ./...

## check: no large file, formatting, vet, lint, generated code current, tests
## with -race, every code of schema/codes.yaml logged by a test
check: size fmt vet lint gen-check test codes

## lint: golangci-lint (the pinned version, built into .tmp/bin from the Go
## module proxy on first use: about two minutes) with .golangci.yaml
LINT_VERSION ?= v2.15.0
LINT := $(CURDIR)/.tmp/bin/golangci-lint
$(LINT):
	GOBIN=$(CURDIR)/.tmp/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(LINT_VERSION)
## lint-install: build the pinned golangci-lint into .tmp/bin (.ci/run calls it)
lint-install: $(LINT)
lint: $(LINT)
	@$(LINT) version | grep -q "version $(LINT_VERSION:v%=%) " || GOBIN=$(CURDIR)/.tmp/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(LINT_VERSION)
	$(LINT) run ./...

## size: fail when a tracked file is over 1 MiB (build output, data)
size:
	@scripts/check-size.sh

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## gen-check: fail when gen/ or docs/codes.md differ from a fresh generation
gen-check:
	$(GO) generate ./...
	@if [ -n "$$(git status --porcelain -- gen docs/codes.md internal/codetest/emitted_gen_test.go)" ]; then \
		echo "gen/ or docs/codes.md is stale: run 'make generate' and commit the result"; \
		git --no-pager diff -- gen docs/codes.md internal/codetest/emitted_gen_test.go | head -100; \
		git status --porcelain -- gen docs/codes.md internal/codetest/emitted_gen_test.go; exit 1; fi

## test: every test, with the race detector, through internal/tools/testsummary:
## a line per package with its counts, a SKIP line for each skipped test with
## its reason, the output of a failed test. The codes the tests log are
## recorded under CODES_DIR for make codes (internal/codetest).
CODES_DIR ?= $(CURDIR)/.tmp/codes
test:
	@rm -rf $(CODES_DIR) && mkdir -p $(CODES_DIR)
	MAILER_CODES_RECORD=$(CODES_DIR) $(GO) run ./internal/tools/testsummary -race -count=1 $(PKGS)

## codes: fail when a code schema/codes.yaml says the kit gives was logged by
## no test at its level (reads what make test recorded)
codes:
	MAILER_CODES_CHECK=$(CODES_DIR) $(GO) test -count=1 -run '^TestEveryCodeIsEmitted$$' ./internal/codetest

test-short:
	$(GO) test -short $(PKGS)

## fuzz: run each fuzz target for FUZZN inputs (CI runs 20000 each). A count,
## not a duration: Go 1.26's fuzzing coordinator can fail a run whose -fuzztime
## is a duration with a spurious "context deadline exceeded" (go.dev/issue/75804,
## fixed in Go 1.27).
FUZZN ?= 200000
fuzz:
	$(GO) test ./internal/gentest/jobv1test -run '^$$' -fuzz '^FuzzValidate$$' -fuzztime $(FUZZN)x
	$(GO) test ./internal/gentest/jobv1test -run '^$$' -fuzz '^FuzzFastPath$$' -fuzztime $(FUZZN)x
	$(GO) test ./internal/gentest/jobv1test -run '^$$' -fuzz '^FuzzDecodeValue$$' -fuzztime $(FUZZN)x
	$(GO) test ./internal/gentest/jobv1test -run '^$$' -fuzz '^FuzzEncodeValue$$' -fuzztime $(FUZZN)x
	$(GO) test ./cmd/generate -run '^$$' -fuzz '^FuzzClassOf$$' -fuzztime $(FUZZN)x
	$(GO) test ./mailqueue -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZN)x -parallel 1
	$(GO) test ./mailqueue -run '^$$' -fuzz '^FuzzOpenBound$$' -fuzztime $(FUZZN)x -parallel 1
	$(GO) test ./internal/jcs -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZN)x
	$(GO) test ./internal/strictjson -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZN)x
	$(GO) test ./mailqueue -run '^$$' -fuzz '^FuzzEnqueueJSON$$' -fuzztime $(FUZZN)x -parallel 1
	$(GO) test ./internal/schemarules -run '^$$' -fuzz '^FuzzCompareInstants$$' -fuzztime $(FUZZN)x

## bench: the benchmarks of the kit (see BENCHMARKS.md); bench-redis: the Redis driver against asynq;
## bench-postgres: the PostgreSQL driver against River
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./mailqueue

bench-redis:
	cd bench && $(GO) run . -redis 127.0.0.1:6379 -db 15

bench-postgres:
	cd bench && $(GO) run . -store postgres -rounds 3

## demo: the main job on the embedded default
demo:
	$(GO) run ./cmd/mailq demo
