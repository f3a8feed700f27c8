# headspace — the two commands a newcomer types are `make bench` and `make test`.

GO       ?= go
DEVICE   ?= emulated
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BIN      := bin/headspace

# The sweep `make bench` runs: every level, both transform paths, at the
# worker count of this machine's cores, on the document's 290 ms step.
BENCH_LEVELS     ?= none,raw,sample,host,device
BENCH_WORKERS    ?= 2
BENCH_TRANSFORMS ?= naive,fast
BENCH_STEPS      ?= 4
BENCH_COUNT      ?= 6
BENCH_OUT        ?= results/$(COMMIT).txt
BENCH_FLAGS      ?=

.PHONY: all build test bench compare vet clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/headspace

# Tests: vet, then every package with the race detector (goleak checks for
# leaked goroutines in the packages that start any).
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 10m ./...

# The main job: the caching ladder on $(DEVICE), written to $(BENCH_OUT) in
# Go benchmark format, then summarised by benchstat.
bench: build
	@mkdir -p $(dir $(BENCH_OUT))
	$(BIN) ladder --device $(DEVICE) --levels $(BENCH_LEVELS) --workers $(BENCH_WORKERS) \
		--transforms $(BENCH_TRANSFORMS) --steps $(BENCH_STEPS) --count $(BENCH_COUNT) \
		--out $(BENCH_OUT) $(BENCH_FLAGS)
	$(GO) tool benchstat -col /level $(BENCH_OUT)

# make compare OLD=a.txt NEW=b.txt
compare:
	@test -n "$(OLD)" -a -n "$(NEW)" || { echo "usage: make compare OLD=old.txt NEW=new.txt"; exit 2; }
	$(GO) tool benchstat $(OLD) $(NEW)

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
