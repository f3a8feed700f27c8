# headspace — the two commands a newcomer types are `make bench` and `make test`.

GO       ?= go
DEVICE   ?= emulated
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BIN      := bin/headspace

# The sweep `make bench` runs is workloads.DefaultLadder, the defaults of
# `headspace ladder`: every level, both transform paths, one worker per
# core, 6 runs of 4 steps on the document's 290 ms step. BENCH_FLAGS
# changes it (e.g. BENCH_FLAGS="--workers 1,2,4 --count 10").
BENCH_OUT        ?= results/$(COMMIT).txt
BENCH_FLAGS      ?=

.PHONY: all build test bench compare check baseline ci-smoke vet clean reproduce peer

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
	$(BIN) ladder --device $(DEVICE) --out $(BENCH_OUT) $(BENCH_FLAGS)
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

# The what-if model (issue 17): profile the pipeline, predict steps/s over
# cores, workers and step times, and check the predictions on this machine
# (16 points, about a minute on 2 cores): WHATIF_OUT keeps every run,
# notebooks/whatif.md the report section, notebooks/figures/whatif.png the
# plot. WHATIF_FLAGS changes it (e.g. WHATIF_FLAGS="--workers 4").
WHATIF_OUT   ?= results/whatif-$(COMMIT).txt
WHATIF_FLAGS ?=
.PHONY: whatif
whatif: build
	@mkdir -p $(dir $(WHATIF_OUT)) notebooks/figures
	$(BIN) whatif --verify --out $(WHATIF_OUT) --report notebooks/whatif.md \
		--plot notebooks/figures/whatif.png $(WHATIF_FLAGS)
