package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/prng"
	"github.com/headspace-bench/headspace/datasets/transforms"
)

func mergeSignatures(ms ...map[string]string) map[string]string {
	all := map[string]string{}
	for _, m := range ms {
		maps.Copy(all, m)
	}
	return all
}

// TestTransformSignatures checks the Go side's view of each device
// transform kernel's parameters against transforms.ptx.
func TestTransformSignatures(t *testing.T) { checkSignatures(t, TransformsModule, transformSignatures) }

// TestTransformKernelsOnHost runs transforms.cu's kernels on the CPU: the
// same source, compiled as C++ by g++ with testdata/hostshim.h (the thread
// indices as loop variables, each grid run thread by thread), fed the
// batch that DeviceTransform's launches read, at the launches' grid and
// block; its masked crops must be the Go fast transform's ApplyUint8 bit
// for bit. No GPU is needed, so the kernels' arithmetic (the random draws,
// the thresholds, the dilation, the crop's indexing) is tested in make
// test; what this cannot test is the PTX itself, which cuda check runs on a
// GPU. g++ is in the Makefile's TEST_DEBS: a missing compiler fails.
func TestTransformKernelsOnHost(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatalf("g++ is needed to run the transform kernels on the host (make test-deps installs it): %v", err)
	}
	bin := filepath.Join(t.TempDir(), "emulate")
	out, err := exec.Command(gxx, "-std=c++17", "-O2", "-Wall", "-Werror", "-o", bin, filepath.Join("testdata", "emulate.cc")).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ testdata/emulate.cc: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		w, h, crop, n int
		ratio         float64
	}{
		{23, 17, 10, 3, 0.25}, {96, 80, 70, 2, 0.25}, {130, 129, 128, 2, 0.25},
		{40, 40, 8, 2, 0}, {40, 40, 8, 2, 1}, {64, 48, 30, 5, 0.6},
	} {
		for _, devCrop := range []bool{false, true} {
			name := fmt.Sprintf("%dx%d crop %d ratio %v device-crop=%v", tc.w, tc.h, tc.crop, tc.ratio, devCrop)
			t.Run(name, func(t *testing.T) {
				tr := DeviceTransform{Config: transforms.Config{Crop: tc.crop, MaskRatio: tc.ratio}, Width: tc.w, Height: tc.h, DeviceCrop: devCrop}
				img := &datasets.Image{Width: tc.w, Height: tc.h, Pix: make([]uint8, 3*tc.w*tc.h)}
				src := prng.New(uint64(tc.w), uint64(tc.crop))
				src.Fill(img.Pix)
				raw, _, _, err := deviceTransformCase(tr, img, tc.n, 99)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]uint8, tc.n*tr.Config.OutLen())
				f, _ := transforms.New("fast", tr.Config)
				for s := range tc.n {
					rng := prng.New(99, uint64(s))
					if err := f.(transforms.Uint8Applier).ApplyUint8(want[s*tr.Config.OutLen():(s+1)*tr.Config.OutLen()], img, &rng); err != nil {
						t.Fatal(err)
					}
				}
				ls := tr.Launches("raw", "mask", "u8", tc.n)
				var in bytes.Buffer
				for _, v := range []int64{int64(tc.n), int64(tc.crop), int64(ls[1].Args[2].(int32)), int64(ls[1].Args[3].(int32)),
					int64(ls[1].Args[8].(int32)), int64(ls[0].Args[5].(uint64)), int64(ls[0].Args[1].(int32)), int64(ls[0].Block[0])} {
					binary.Write(&in, binary.LittleEndian, v)
				}
				in.Write(raw)
				cmd := exec.Command(bin)
				cmd.Stdin = &in
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				got, err := cmd.Output()
				if err != nil {
					t.Fatalf("emulate: %v\n%s", err, stderr.Bytes())
				}
				if len(got) != len(want) {
					t.Fatalf("emulate wrote %d bytes, want %d", len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						plane := tc.crop * tc.crop
						s, c, p := i/(3*plane), i%(3*plane)/plane, i%plane
						t.Fatalf("sample %d channel %d pixel (%d, %d): kernel %d, fast %d", s, c, p/tc.crop, p%tc.crop, got[i], want[i])
					}
				}
			})
		}
	}
}

// TestNetPlanDevice checks the device-transform plan: its launches fit its
// buffers, the uploaded batch is the raw samples, and Convert runs the
// transform before convert_scale.
func TestNetPlanDevice(t *testing.T) {
	for _, devCrop := range []bool{false, true} {
		tr := DeviceTransform{Config: transforms.Config{Crop: 16, MaskRatio: 0.25}, Width: 40, Height: 24, DeviceCrop: devCrop}
		p, err := NetPlanDevice(3, tr, 1)
		if err != nil {
			t.Fatal(err)
		}
		checkLaunches(t, "NetPlanDevice convert", p.Buffers, p.Convert)
		checkLaunches(t, "NetPlanDevice step", p.Buffers, p.Step)
		in, ok := p.Buffer(p.InputU8)
		if !ok || in.Bytes != int64(3*tr.SampleBytes()) {
			t.Errorf("device-crop=%v: InputU8 %q is %d bytes, want 3 samples of %d", devCrop, p.InputU8, in.Bytes, tr.SampleBytes())
		}
		var ks []string
		for _, l := range p.Convert {
			ks = append(ks, l.Kernel)
		}
		if want := []string{"transform_mask", "transform_crop", "convert_scale"}; !reflect.DeepEqual(ks, want) {
			t.Errorf("Convert launches %v, want %v", ks, want)
		}
	}
	if _, err := NetPlanDevice(2, DeviceTransform{Config: transforms.Config{Crop: 32, MaskRatio: 0.25}, Width: 16, Height: 16}, 1); err == nil {
		t.Error("a crop larger than the raw image was accepted")
	}
	if _, err := NetPlanDevice(2, DeviceTransform{Config: transforms.Config{Crop: 12, MaskRatio: 0.25}, Width: 16, Height: 16}, 1); err == nil {
		t.Error("a crop that is not a power of two was accepted")
	}
}

// TestEmulatorSourceIsTheKernels guards the emulation's premise: the host
// build includes the very transforms.cu that make ptx compiles.
func TestEmulatorSourceIsTheKernels(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "emulate.cc"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte(`#include "../transforms.cu"`)) {
		t.Error("testdata/emulate.cc does not include ../transforms.cu")
	}
}

// TestDeviceTransformTolerance checks the derived tolerance against the
// checks' own expected values: ConvertScale of ApplyUint8 (what the kernels
// compute) is within DeviceTransformTolerance of Apply everywhere, and the
// bound is not loose by orders of magnitude.
func TestDeviceTransformTolerance(t *testing.T) {
	var worst float64
	n := 0
	for _, c := range Checks(1) {
		if len(c.Outputs) != 2 || c.Launches[0].Kernel != "transform_mask" {
			continue
		}
		n++
		exact, applied := c.Outputs[0], c.Outputs[1]
		if exact.Tol != 0 || applied.Tol != DeviceTransformTolerance {
			t.Errorf("%s: tolerances %g and %g, want 0 and %g", c.Name, exact.Tol, applied.Tol, DeviceTransformTolerance)
		}
		if err := applied.Compare(exact.Want); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		for i, v := range exact.Want {
			worst = max(worst, abs(float64(v)-float64(applied.Want[i])))
		}
	}
	if n != 4 {
		t.Fatalf("%d device transform checks, want 4", n)
	}
	if worst > DeviceTransformTolerance || worst < DeviceTransformTolerance/64 {
		t.Errorf("largest difference %g against a tolerance of %g", worst, DeviceTransformTolerance)
	}
	t.Logf("largest difference between the two float paths: %g (tolerance %g)", worst, DeviceTransformTolerance)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
