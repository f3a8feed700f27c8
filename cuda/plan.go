package cuda

import "fmt"

// The types below mirror package cuda/kernels's plan, pure data that this
// package executes without knowing the model: which device buffers to make,
// which kernels to launch with which arguments.

// Arg is one kernel argument: a Buf (the device pointer of that buffer), or
// an int32, uint32, float32 or uint64 value.
type Arg any

// Buf is an argument that resolves to the device pointer of the named buffer.
type Buf struct{ Name string }

// Launch is one kernel launch.
type Launch struct {
	Module, Kernel string // the module (a key of Plan.Modules) and the entry point
	Grid, Block    [3]uint32
	SharedBytes    uint32
	Args           []Arg
}

// Buffer is a device buffer. Init, if not nil, is uploaded once at setup;
// otherwise the buffer starts zeroed.
type Buffer struct {
	Name  string
	Bytes int64
	Init  []byte
}

// Plan is a model's training step as buffers and launches.
//
// Input names the float32 [batch, 3, side, side] input buffer, InputU8 the
// uint8 one of the same shape, Labels the int32 labels: a Step's launches
// that name them read the batch just uploaded (the device points them at
// the uploaded copy, so the batch is not copied again on the device).
// Convert turns InputU8 into Input (ConvertColor and Scale), run before the
// Step launches on uint8 batches. Loss names a float32 buffer holding the
// last step's loss.
type Plan struct {
	Modules                map[string][]byte // PTX by module name
	Buffers                []Buffer
	Input, InputU8, Labels string
	Convert, Step          []Launch
	Loss                   string
}

// Output is a buffer to read back after a Check and compare with Want.
type Output struct {
	Buf  string
	Want []float32
	Tol  float64 // the largest absolute error accepted
}

// Check runs launches on small inputs and compares outputs with a
// reference computed on the host.
type Check struct {
	Name     string
	Buffers  []Buffer
	Launches []Launch
	Outputs  []Output
}

// buffer returns the buffer named name.
func (p *Plan) buffer(name string) (Buffer, bool) {
	for _, b := range p.Buffers {
		if b.Name == name {
			return b, true
		}
	}
	return Buffer{}, false
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
