// Package gpu holds no code but the committed result files of a lent
// GPU that later runs are set beside: it embeds the H100 run of
// 2026-11-22 at commit 15709d7 (notebooks/003-caching-ladder-gpu.md),
// whose figures are the anchors of harness/gpugoals' goals (decoded by
// workloads.CUDAGoals through their codecs), so that an anchor is read
// from its file, never typed in (issue 57 item 5).
package gpu

import _ "embed"

// The H100 run's files, as committed beside this file.
var (
	// H100Ladder is the ladder on the H100 (levels, workers, placement
	// and pinning): nvidia-h100-80gb-hbm3-15709d7.txt.
	//go:embed nvidia-h100-80gb-hbm3-15709d7.txt
	H100Ladder []byte
	// H100Check is cuda check's file there (the Net's step, the copies):
	// nvidia-h100-80gb-hbm3-15709d7-cuda-check.txt.
	//go:embed nvidia-h100-80gb-hbm3-15709d7-cuda-check.txt
	H100Check []byte
	// H100Torch is PyTorch's ladder on the same card:
	// nvidia-h100-80gb-hbm3-15709d7-torch-ladder.txt.
	//go:embed nvidia-h100-80gb-hbm3-15709d7-torch-ladder.txt
	H100Torch []byte
)

// H100 names the run in the anchors' text.
const H100 = "the H100 run of 2026-11-22"
