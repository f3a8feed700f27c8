# headspace — the two commands a newcomer types are `make bench` and `make test`.

GO       ?= go
DEVICE   ?= emulated
COMMIT   := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BIN      := bin/headspace

# The sweep `make bench` runs is workloads.DefaultLadder, the defaults of
# `headspace ladder`: every level, both transform paths, one worker per
# core, 6 runs of 4 steps on the document's 290 ms step. Each BENCH_*
# setting below, when set, becomes the ladder flag beside it (the nightly
# workflow and ci/smoke.sh set them); BENCH_FLAGS adds any other flag
# (e.g. BENCH_FLAGS="--raw-size 256 --step 20ms").
BENCH_OUT        ?= results/$(COMMIT).txt
BENCH_FLAGS      ?=
BENCH_LEVELS     ?=
BENCH_WORKERS    ?=
BENCH_TRANSFORMS ?=
BENCH_STEPS      ?=
BENCH_COUNT      ?=
BENCH_SWEEP = $(if $(BENCH_LEVELS),--levels $(BENCH_LEVELS)) \
	$(if $(BENCH_WORKERS),--workers $(BENCH_WORKERS)) \
	$(if $(BENCH_TRANSFORMS),--transforms $(BENCH_TRANSFORMS)) \
	$(if $(BENCH_STEPS),--steps $(BENCH_STEPS)) \
	$(if $(BENCH_COUNT),--count $(BENCH_COUNT))

.PHONY: peers-env test-peers test-ownloop-torch2 peers peers-spdl-cache bench-remote all build test test-deps lint-ci history cross bench compare check baseline ci-smoke vet clean reproduce gate peer peer-remote ptx gpu-bundle cluster-test k8s-validate

all: build

build:
	$(GO) build -o $(BIN) ./cmd/headspace

# The Debian packages the tests use, installed by ci/deps.sh where missing
# (one line per package, each with the test that needs it).
TEST_DEBS :=
# make cluster-test: a real single-node Slurm; so do harness/ownloop's
# TestSrun* and cmd/headspace's TestAnalyzeRanksSrun* (internal/slurmtest).
TEST_DEBS += slurm-wlm munge
# history's TestPageInBrowser loads the history page in headless Chromium.
TEST_DEBS += chromium
# cuda/kernels TestTransformKernelsOnHost and TestTF32KernelsOnHost: the .cu
# kernels compiled for the host.
TEST_DEBS += g++
# libjpeg-turbo's TurboJPEG, loaded with purego: datasets/turbojpeg's tests,
# ondisk's, the loader's (TestLoaderDecodeScale) and cmd/headspace's --decoder turbojpeg tests (TestLadderData*, TestLadderDecodeScale).
TEST_DEBS += libturbojpeg0
# libjpeg-turbo's libjpeg API, loaded with purego for cropped decoding
# (--decode-crop on): datasets/turbojpeg's TestDecodeCrop*, ondisk's
# TestDecodeCrop, the loader's TestLoaderDecodeCrop.
TEST_DEBS += libjpeg62-turbo
# Debian's /usr/bin/python3 with PIL writes the foreign-dataset fixtures
# (ImageFolder, mixed sizes, tarfile shards) of cmd/headspace's
# TestLadderData* and datasets/ondisk's TestForeign*.
TEST_DEBS += python3-pil
# The document's own PyTorch code (peers/torch): harness/peer's
# TestLadderScriptRunsEmulated, reproduce's TestRunQuick003WithTorch and
# cmd/headspace's TestLadderScriptDefaultsAreOurs run it.
TEST_DEBS += python3-torch python3-torchvision python3-scipy
# A user's own training script under the hook (harness/ownloop's
# tests, cmd/headspace's TestAnalyzeOwnLoop* and TestLadderOwnLoop): torch,
# and torchvision for the DatasetFolder script; both are in the line above.
# The boto3 peer (peers/torch/s3.py): cmd/headspace's TestPeerRemoteEndToEnd
# and harness/peer's TestRemoteScriptUnreachable run it.
TEST_DEBS += python3-boto3

# Tests: the cross-builds, vet, every package with the race detector (goleak
# checks for leaked goroutines in the packages that start any), then the CI
# scripts, small. The timeout is a liveness bound per package: cmd/headspace,
# the largest, takes about 8 minutes with -race alone on 2 cores, and more on
# a busy machine.
test: test-deps cross lint-ci
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	ci/smoke.sh
	$(MAKE) cluster-test k8s-validate

# The nightly workflow, linted by actionlint (pinned, run from the Go
# module proxy; ci/actionlint.yaml names the self-hosted runner labels).
ACTIONLINT ?= github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
lint-ci:
	$(GO) run $(ACTIONLINT) -config-file ci/actionlint.yaml ci/nightly-gpu.yml

# The pinned S3-compatible server (versitygw) that datasets/bucket's and
# the remote-data tests start on 127.0.0.1, built once into a cached bin
# directory (ci/versitygw.sh).
test-deps:
	@[ -z "$(strip $(TEST_DEBS))" ] || ci/deps.sh $(TEST_DEBS)
	@ci/versitygw.sh >/dev/null

# It builds for macOS (both architectures) and Windows: Linux-only
# facilities sit behind build tags.
cross:
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	GOOS=darwin GOARCH=amd64 $(GO) build ./...
	GOOS=windows GOARCH=amd64 $(GO) build ./...

# The main job: the caching ladder on $(DEVICE), written to $(BENCH_OUT) in
# Go benchmark format, then summarised by benchstat.
bench: build
	@mkdir -p $(dir $(BENCH_OUT))
	$(BIN) ladder --device $(DEVICE) --out $(BENCH_OUT) $(strip $(BENCH_SWEEP)) $(BENCH_FLAGS)
	$(GO) tool benchstat -col /level $(BENCH_OUT)

# The history page of the committed store (docs/history.md):
# history.html, self-contained; HISTORY_STORE picks another store.
HISTORY_STORE ?= results/store
history: build
	$(BIN) history report --store $(HISTORY_STORE) --out history.html

# The ladder with its data in a bucket: the pinned S3-compatible server
# started on 127.0.0.1, a dataset uploaded, `ladder --data s3://…`, then
# everything stopped and removed (ci/bench-remote.sh; docs/remote.md).
# REMOTE_SWEEP is the sweep: level none (every sample from the bucket, as a
# first epoch reads) beside local (a local copy of the objects, as later
# epochs read), encoded, raw and device. REMOTE_FLAGS adds ladder flags
# after it (--link …, --fetch-concurrency; a flag of the sweep given again
# overrides it). The README states this sweep; a test holds it to it.
REMOTE_OUT   ?= results/remote-$(COMMIT).txt
REMOTE_SWEEP ?= --levels none,local,encoded,raw,device --transforms fast --steps 4 --count 3
REMOTE_FLAGS ?=
bench-remote: build
	@mkdir -p $(dir $(REMOTE_OUT))
	ci/bench-remote.sh $(REMOTE_OUT) $(REMOTE_SWEEP) $(REMOTE_FLAGS)
	$(GO) tool benchstat -col /level $(REMOTE_OUT)

# make compare OLD=a.txt NEW=b.txt
compare:
	@test -n "$(OLD)" -a -n "$(NEW)" || { echo "usage: make compare OLD=old.txt NEW=new.txt"; exit 2; }
	$(GO) tool benchstat -ignore commit $(OLD) $(NEW)

# The gate on this machine: a fresh `make bench`, compared with the baseline
# of the machine and device it ran on (exit 1 on a regression, 2 when the
# evidence is short; the first run on a machine records its baseline).
check: bench
	ci/gate.sh $(BENCH_OUT)

# The paired gate (docs/gate.md): BASE (default main) and this tree run
# alternately in randomized rounds on this machine, the BENCH_* sweep,
# into $(PAIRED_OUT); exit 1 slower (confirmed), 3 rerun.
BASE       ?= main
PAIRED_OUT ?= results/paired-$(COMMIT)
gate: build
	ci/paired.sh $(BASE) $(PAIRED_OUT)

# Record this run as this machine's baseline (`headspace baseline` names it:
# results/baseline/<device>-<cpu>-<cores>c.txt).
baseline: bench
	@b=$$($(BIN) baseline $(BENCH_OUT)) && mkdir -p $$(dirname $$b) && cp $(BENCH_OUT) $$b && echo "baseline: $$b"

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
PEER_JPEG     ?= $(or $(TMPDIR),/tmp)/headspace-peer-natural-jpeg
PEER_JPEG_OUT ?= results/peer-ondisk-jpeg-emulated.txt
peer: build
	@$(PEER_PYTHON) -c 'import torch, torchvision, scipy, PIL, boto3' 2>/dev/null || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "installing Debian's python3-torch, python3-torchvision, python3-scipy, python3-pil, python3-boto3"; \
		$$sudo apt-get update && $$sudo apt-get install -y --no-install-recommends \
			python3-torch python3-torchvision python3-scipy python3-pil python3-boto3; }
	$(BIN) peer --python $(PEER_PYTHON) --out $(PEER_OUT) --report notebooks/peer.md \
		--plot notebooks/figures/peer $(PEER_FLAGS)
	@# The on-disk JPEG row: both sides read the same 1024² natural JPEGs
	@# (written once), ours with libjpeg-turbo, the peer with PIL's.
	@[ -f $(PEER_JPEG)/manifest.json ] || $(BIN) dataset write --content natural --format jpeg \
		--raw-size 1024 --n 1536 --layout shards --out $(PEER_JPEG)
	$(BIN) peer --python $(PEER_PYTHON) --data $(PEER_JPEG) --decoder turbojpeg \
		--out $(PEER_JPEG_OUT) --report notebooks/peer-ondisk-jpeg.md $(PEER_FLAGS)

# The real peers' pinned Python environment (peers/requirements.txt: torch 2,
# torchvision, SPDL, torchdata, DALI, tensorflow-cpu, the bucket clients,
# Lightning, …), made once a machine by ci/peers-env.sh under
# ~/.cache/headspace/peers-env, its wheels kept, so torch downloads once
# (about 8 GB and 10 minutes the first time). SPDL decodes with FFmpeg's
# libraries: Debian's, installed by ci/deps.sh. `make test` does not use it.
PEERS_DEBS := libavdevice59 libavfilter8 libavformat59 libavcodec59 libswscale6 libswresample4
peers-env:
	@ci/deps.sh $(PEERS_DEBS)
	ci/peers-env.sh

# The tests that run the real peers' scripts in that environment
# (harness/realpeer's TestScripts*, cmd/headspace's TestPeersEndToEnd,
# TestPeersInterrupt, TestPeersSPDLCache and TestPeersSPDLCacheInterrupt,
# cuda's TestPeersEnvLibraries: its cuDNN and cuBLAS wheels opened, no GPU
# needed; built with -tags peersenv):
# .ci/run runs this where `ci/peers-env.sh --existing` finds the env.
test-peers:
	@ci/deps.sh $(PEERS_DEBS)
	HEADSPACE_PEERS_PYTHON="$$(ci/peers-env.sh --existing)" $(GO) test -count=1 -timeout 15m -tags peersenv -run '^(TestPeers|TestScripts)' ./harness/realpeer/ ./cmd/headspace/ ./cuda/

# The own-loop tests (harness/ownloop, cmd/headspace's analyze, ladder,
# whatif and tune of a user's script, torchrun's ranks) on the pinned
# env's torch 2 instead of Debian's torch 1.13 (make test runs them
# there), and, built with -tags peersenv, the framework tests that need
# the env's Lightning, transformers and timm (examples/own-loop).
# .ci/run runs this where `ci/peers-env.sh --existing` finds the env.
OWNLOOP_TESTS ?= ^(TestAnalyzeOwnLoop|TestLadderOwnLoop|TestWhatIfOwnLoop|TestAnalyzeRanks|TestLadderAndWhatIfRanks|TestWhatIfVerifyRanks|TestTune|TestFrameworks)
test-ownloop-torch2:
	@py=$$(ci/peers-env.sh --existing) || { echo "make test-ownloop-torch2: no peers environment (make peers-env makes it)" >&2; exit 2; }; \
	set -x; \
	HEADSPACE_OWNLOOP_PYTHON="$$py" $(GO) test -count=1 -timeout 25m -tags peersenv ./harness/ownloop/ && \
	HEADSPACE_OWNLOOP_PYTHON="$$py" $(GO) test -count=1 -timeout 25m -tags peersenv -run '$(OWNLOOP_TESTS)' ./cmd/headspace/

# The real peers beside our loader on natural JPEGs in an ImageFolder
# (docs/peers.md): torch 2's DataLoader, SPDL, torchdata.nodes (threads and
# processes), DALI's CPU pipeline and tf.data, alternated round by round;
# then s3torchconnector's datasets, Mosaic's Streaming and litdata (each on
# its own format, written by its own writer) on the same images in the
# pinned S3 server on 127.0.0.1.
PEERS_OUT        ?= results/peers-emulated.txt
PEERS_BUCKET_OUT ?= results/peers-bucket-emulated.txt
peers: build peers-env
	$(BIN) peer --peers all --workers 1,2 --python "$$(ci/peers-env.sh)" --out $(PEERS_OUT) --report notebooks/peers.md --plot notebooks/figures/peers $(PEERS_FLAGS)
	@ci/versitygw.sh >/dev/null
	$(BIN) peer --peers all-bucket --workers 1,2 --python "$$(ci/peers-env.sh)" --out $(PEERS_BUCKET_OUT) --report notebooks/peers-bucket.md $(PEERS_FLAGS)

# SPDL's own headspace analysis (its CacheDataLoader, turned on by a flag of
# examples/own-loop/train_cachedataloader.py) beside headspace analyze on the
# same script, unchanged, alternated round by round (docs/peers.md; about 8
# minutes on 2 cores).
PEERS_SPDL_CACHE_OUT   ?= results/peers-spdl-cache.txt
PEERS_SPDL_CACHE_FLAGS ?=
peers-spdl-cache: build peers-env
	$(BIN) peer --spdl-cache --python "$$(ci/peers-env.sh)" --out $(PEERS_SPDL_CACHE_OUT) --report notebooks/peers-spdl-cache.md $(PEERS_SPDL_CACHE_FLAGS)

# The boto3 peer on data in a bucket (peers/torch/s3.py) beside our loader
# over --data s3://, on one local versitygw behind one emulated link
# (docs/peer.md; about 3 minutes on 2 cores). Run make peer first once
# for the packages.
PEER_REMOTE_OUT   ?= results/peer-remote-cross-region.txt
PEER_REMOTE_FLAGS ?= --workers 1,4,16 --batch 8 --batches 96 --decoder turbojpeg --link cross-region --fetch-concurrency 64
peer-remote: build
	@ci/versitygw.sh >/dev/null
	$(BIN) peer --remote --python $(PEER_PYTHON) --out $(PEER_REMOTE_OUT) --report notebooks/peer-remote.md $(PEER_REMOTE_FLAGS)

# The CUDA kernels' PTX (cuda/kernels/*.ptx, committed) from their CUDA C
# sources, compiled by Debian's clang without a CUDA toolkit; clang is
# installed first when missing (with sudo when not root). Each .ptx starts
# with the sha256 of its source and the compiler's version, and a test fails
# when a .cu no longer matches its .ptx: edit a .cu, run make ptx, commit both.
CLANG     ?= clang
CUDA_ARCH ?= sm_80
ptx:
	@command -v $(CLANG) >/dev/null 2>&1 || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "installing Debian's clang"; \
		$$sudo apt-get update && $$sudo apt-get install -y --no-install-recommends clang; }
	@set -e; for cu in cuda/kernels/*.cu; do \
		ptx=$${cu%.cu}.ptx; \
		{ printf '// Generated by make ptx from %s: do not edit.\n' "$$(basename $$cu)"; \
		  printf '// source sha256: %s\n' "$$(sha256sum $$cu | cut -d ' ' -f 1)"; \
		  printf '// compiler: %s\n' "$$($(CLANG) --version | head -n 1)"; \
		  $(CLANG) -x cuda --cuda-device-only --cuda-gpu-arch=$(CUDA_ARCH) -nocudainc -nocudalib \
			-O3 -S $$cu -o -; } > $$ptx.tmp; \
		mv $$ptx.tmp $$ptx; echo "$$ptx"; \
	done

# A real single-node Slurm (Debian's slurm-wlm and munge, installed where
# missing) runs a tiny ladder as a 3-task array through ci/slurm/sweep.sh,
# one task failing and resubmitted alone, and the merge job's file must
# equal a single-process run in points and settings; the daemons are
# stopped by pid and nothing is left behind (docs/cluster.md).
cluster-test: build
	ci/cluster-test.sh

# The Kubernetes Indexed Job (ci/k8s/*.yaml) against the API schema:
# kubeconform (go run, pinned) over schemas made from k8s.io/kubernetes'
# OpenAPI document, both from the Go module proxy; no cluster needed.
k8s-validate:
	ci/k8s/validate.sh

# The nightly workflow's scripts, run small on the emulated device.
ci-smoke:
	ci/smoke.sh

vet:
	$(GO) vet ./...

clean:
	rm -rf bin

# One folder for a GPU machine with no Go and no network: the linux/amd64
# binary (no cgo: the CUDA driver is bound at run time), ci/gpu-suite.sh and
# the PyTorch peers (the suite writes its natural JPEGs there, in seconds)
# and lib/libturbojpeg.so.0, this machine's (Debian's libturbojpeg0, from
# make test-deps; linux/amd64 only): the H200 of 2026-11-27 had none, and
# --decoder turbojpeg failed there. The binary is built with -buildvcs=auto
# (over a GOFLAGS=-buildvcs=false), so it names its own commit in its result
# files wherever it runs: the H200 of 2026-11-28 named the machine's copy
# of the tree instead (docs/gpu.md). On a lent GPU, one call:
# `ci/gpu-suite.sh --archive A all OUT` (8 minutes: the goals' figures
# first, OUT/goals.txt and the archive A after every command; docs/gpu.md).
BUNDLE ?= bundle
TURBOJPEG_SO = $(shell /sbin/ldconfig -p 2>/dev/null | awk '/libturbojpeg\.so\.0 .*x86-64/ {print $$NF; exit}')
gpu-bundle:
	rm -rf $(BUNDLE) && mkdir -p $(BUNDLE)/ci $(BUNDLE)/peers
	@if [ "$$(uname -sm)" = "Linux x86_64" ]; then \
	  [ -n "$(TURBOJPEG_SO)" ] || { echo "gpu-bundle: no libturbojpeg.so.0 here: make test-deps installs Debian's libturbojpeg0" >&2; exit 2; }; \
	  mkdir -p $(BUNDLE)/lib && cp -L "$(TURBOJPEG_SO)" $(BUNDLE)/lib/libturbojpeg.so.0; \
	else echo "gpu-bundle: not on linux/amd64: the bundle carries no libturbojpeg (the GPU machine's own, if any)" >&2; fi
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -buildvcs=auto -o $(BUNDLE)/headspace ./cmd/headspace
	cp ci/gpu-suite.sh $(BUNDLE)/ci/
	echo $(COMMIT)$(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty) >$(BUNDLE)/COMMIT
	cp -R peers/torch $(BUNDLE)/peers/
	@echo "$(BUNDLE)/: on the GPU machine, one call: ci/gpu-suite.sh --archive OUT/gpu.tgz all /tmp/gpu (then cat /tmp/gpu/goals.txt)"

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
	$(BIN) whatif --ladder --verify --out $(WHATIF_OUT) --report notebooks/whatif.md \
		--plot notebooks/figures/whatif.png $(WHATIF_FLAGS)
