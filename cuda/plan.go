package cuda

import "fmt"

// The plan types below are the one definition of a kernel plan: pure data
// (which device buffers to make, which kernels to launch with which
// arguments) that package cuda/kernels builds for the Net and this package
// executes without knowing the model.

// Arg is one kernel argument: a Buf (the device pointer of that buffer), or
// an int32, uint32, float32 or uint64 value.
type Arg any

// Buf is an argument that resolves to the device pointer of the named buffer.
type Buf struct{ Name string }

// Launch is one kernel launch, or a call of cuDNN where Module is
// LibraryModule (a library op: libop.go).
type Launch struct {
	Module, Kernel string // the module (a key of Plan.Modules) and the entry point
	Grid, Block    [3]uint32
	SharedBytes    uint32 // dynamic shared memory
	Args           []Arg
}

// Buffer is a device buffer. Init, if not nil, is uploaded once at setup
// (len Bytes); nil means zeroed.
type Buffer struct {
	Name  string
	Bytes int64
	Init  []byte
}

// Plan is a model's training step as buffers and launches.
type Plan struct {
	Modules map[string][]byte // PTX by module name
	Buffers []Buffer
	// Input, InputU8 and Labels name the per-step buffers the device fills
	// (they are in Buffers too): the float32 [batch, 3, side, side] batch,
	// the uint8 batch of the same shape (a batching.Batch's Pix: per
	// sample, R, G and B planes) and the int32 labels. A Step's launches
	// that name them read the batch just uploaded (the device points them
	// at the uploaded copy, so the batch is not copied again on the device).
	Input, InputU8, Labels string
	// Convert writes Input from InputU8 (ConvertColor and Scale, as
	// transforms.ConvertScale), run before Step on uint8 batches.
	Convert []Launch
	// Step is one training step, in order, on one stream.
	Step []Launch
	// Loss names the buffer that holds the step's mean loss (one float32).
	Loss string
}

// Buffer returns the buffer named name.
func (p *Plan) Buffer(name string) (Buffer, bool) {
	for _, b := range p.Buffers {
		if b.Name == name {
			return b, true
		}
	}
	return Buffer{}, false
}

// Output is a buffer to read back after a Check and compare with Want.
type Output struct {
	Buf  string
	Want []float32
	Tol  float64 // the largest absolute error accepted, element by element
}

// Compare returns an error naming the first element of got that differs
// from o.Want by more than o.Tol (NaN always differs), or a length mismatch.
func (o Output) Compare(got []float32) error {
	if len(got) != len(o.Want) {
		return fmt.Errorf("%s: %d values, want %d", o.Buf, len(got), len(o.Want))
	}
	for i, g := range got {
		d := float64(g) - float64(o.Want[i])
		if !(d <= o.Tol && -d <= o.Tol) {
			return fmt.Errorf("%s[%d] = %v, want %v (tolerance %g)", o.Buf, i, g, o.Want[i], o.Tol)
		}
	}
	return nil
}

// Check runs Launches on Buffers (uploaded first) and compares Outputs
// with a reference computed on the host.
type Check struct {
	Name     string
	Buffers  []Buffer
	Launches []Launch
	Outputs  []Output
}

// validate checks the plan's names and sizes before anything is allocated.
func validate(modules map[string][]byte, bufs []Buffer, launches ...[]Launch) error {
	seen := map[string]bool{}
	for _, b := range bufs {
		switch {
		case b.Name == "":
			return fmt.Errorf("cuda: plan: a buffer has no name")
		case seen[b.Name]:
			return fmt.Errorf("cuda: plan: buffer %s twice", b.Name)
		case b.Bytes <= 0:
			return fmt.Errorf("cuda: plan: buffer %s of %d bytes", b.Name, b.Bytes)
		case b.Init != nil && int64(len(b.Init)) != b.Bytes:
			return fmt.Errorf("cuda: plan: buffer %s of %d bytes has %d bytes of Init", b.Name, b.Bytes, len(b.Init))
		}
		seen[b.Name] = true
	}
	for _, ls := range launches {
		for i, l := range ls {
			if l.Module == LibraryModule {
				if err := validateOp(i, l); err != nil {
					return err
				}
				for j, a := range l.Args {
					if b, ok := a.(Buf); ok && !seen[b.Name] {
						return fmt.Errorf("cuda: plan: launch %d (%s %s) argument %d: no buffer %q", i, LibraryModule, l.Kernel, j, b.Name)
					}
				}
				continue
			}
			if _, ok := modules[l.Module]; !ok {
				return fmt.Errorf("cuda: plan: launch %d (%s): no module %q", i, l.Kernel, l.Module)
			}
			for k := range 3 {
				if l.Grid[k] == 0 || l.Block[k] == 0 {
					return fmt.Errorf("cuda: plan: launch %d (%s): grid %v, block %v has a zero dimension", i, l.Kernel, l.Grid, l.Block)
				}
			}
			for j, a := range l.Args {
				switch a := a.(type) {
				case Buf:
					if !seen[a.Name] {
						return fmt.Errorf("cuda: plan: launch %d (%s) argument %d: no buffer %q", i, l.Kernel, j, a.Name)
					}
				case int32, uint32, float32, uint64:
				default:
					return fmt.Errorf("cuda: plan: launch %d (%s) argument %d: unsupported type %T", i, l.Kernel, j, a)
				}
			}
		}
	}
	return nil
}
