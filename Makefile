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

.PHONY: all build test bench compare check baseline ci-smoke vet clean reproduce peer gpu-bundle

all: build

build:
	$(GO) build -o $(BIN) ./cmd/headspace

# Tests: vet, every package with the race detector (goleak checks for leaked
# goroutines in the packages that start any), then the CI scripts, small.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 10m ./...
	ci/smoke.sh

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
	$(GO) tool benchstat -ignore commit $(OLD) $(NEW)

# The gate on this machine: a fresh `make bench`, compared with the baseline
# of the device it ran on (exit 1 on a regression).
check: bench
	ci/gate.sh $(BENCH_OUT)

# Record this run as the device's baseline.
baseline: bench
	@dev=$$(sed -n 's/^device: //p' $(BENCH_OUT) | head -n 1 | tr -c 'A-Za-z0-9._-' '-' | sed 's/-*$$//'); \
	mkdir -p results/baseline && cp $(BENCH_OUT) results/baseline/$$dev.txt && echo "baseline: results/baseline/$$dev.txt"

# Every document's experiment, one Markdown report each in notebooks/
# (figures in notebooks/figures/); REPRODUCE_FLAGS=--quick runs every code
# path at tiny sizes, --docs 003 one document.
REPRODUCE_FLAGS ?=
reproduce: build
	$(BIN) reproduce --out notebooks $(REPRODUCE_FLAGS)

# The document's PyTorch pipeline (peers/torch/dataloader.py) beside our
# loader at the same settings, in the same run (about 5 minutes on 2 cores).
# Debian's torch, torchvision, scipy and PIL are installed first if
# $(PEER_PYTHON) cannot import them (with sudo when not root).
PEER_PYTHON ?= /usr/bin/python3
PEER_OUT    ?= results/peer-emulated.txt
PEER_FLAGS  ?=
peer: build
	@$(PEER_PYTHON) -c 'import torch, torchvision, scipy, PIL' 2>/dev/null || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "installing Debian's python3-torch, python3-torchvision, python3-scipy, python3-pil"; \
		$$sudo apt-get update && $$sudo apt-get install -y --no-install-recommends \
			python3-torch python3-torchvision python3-scipy python3-pil; }
	$(BIN) peer --python $(PEER_PYTHON) --out $(PEER_OUT) --report notebooks/peer.md \
		--plot notebooks/figures/peer $(PEER_FLAGS)

# The nightly workflow's scripts, run small on the emulated device.
ci-smoke:
	ci/smoke.sh

vet:
	$(GO) vet ./...

clean:
	rm -rf bin

# One folder for a GPU machine with no Go and no network: the linux/amd64
# binary (no cgo: the CUDA driver is bound at run time), ci/gpu-suite.sh and
# the PyTorch peers. Copy it there and run `ci/gpu-suite.sh ladder OUT`, then
# `ci/gpu-suite.sh loaders OUT` (each under 9 minutes on 16 cores).
BUNDLE ?= bundle
gpu-bundle:
	rm -rf $(BUNDLE) && mkdir -p $(BUNDLE)/ci $(BUNDLE)/peers
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o $(BUNDLE)/headspace ./cmd/headspace
	cp ci/gpu-suite.sh $(BUNDLE)/ci/
	cp -R peers/torch $(BUNDLE)/peers/
	@echo "$(BUNDLE)/: on the GPU machine, ci/gpu-suite.sh ladder OUT, then ci/gpu-suite.sh loaders OUT"
