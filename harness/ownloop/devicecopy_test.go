//go:build linux

package ownloop_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeviceCopyKept: at level device the hook keeps the script's own
// copy of the cached batch on the device. Its Tensor.to and Tensor.cuda
// give, for a tensor of the cached batch (in a tuple, a list or a
// mapping), the copy made the first time to the same device with the
// same arguments (non_blocking aside); a tensor of another batch, a
// conversion that stays on its device and a copy elsewhere are made
// anew. Without a GPU the device is torch's meta device: a copy to
// another device all the same (a CUDA GPU runs it for real).
func TestDeviceCopyKept(t *testing.T) {
	needTorch(t)
	script := `
import torch, headspace_hook as h
h._keep_device_copies(torch)
x, y, z = torch.ones(2, 3), torch.zeros(2, dtype=torch.long), torch.ones(4)
batch = ([x], {"labels": y}, "not a tensor")
h._cache_device(batch)
first = x.to("meta")
assert first.is_meta
assert x.to("meta", non_blocking=True) is first, "the cached tensor's copy made again"
assert y.to(device="meta") is y.to(device="meta"), "a mapping's tensor's copy made again"
assert x.to(torch.float64) is not x.to(torch.float64), "a conversion on the host kept"
assert z.to("meta") is not z.to("meta"), "another batch's copy kept"
assert x.to("meta", torch.float16) is not first and x.to("meta", torch.float16).dtype == torch.float16
assert torch.Tensor.to.__wrapped__ is not None
print("kept")
`
	cmd := exec.Command(python, "-c", script)
	cmd.Env = append(cmd.Environ(), "PYTHONPATH=.")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "kept" {
		t.Fatalf("%v\n%s", err, out)
	}
}
