package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// program is a plan's modules, buffers and launches made ready on a
// context: every kernel argument already marshalled into one arena, so a
// launch costs one driver call and no allocation.
type program struct {
	c       *Context
	modules map[string]uintptr
	ptrs    map[string]uint64 // device pointer of each buffer
	sizes   map[string]int64
	lists   [][]launch // one per launch list given to newProgram
	dnn     *DNN       // the libraries' handles, where a list has library ops

	vals   []uint64         // every argument's value, one 8-byte slot each
	params []unsafe.Pointer // &vals[i], the kernelParams arrays
	pin    runtime.Pinner
}

// launch is one prepared kernel launch.
type launch struct {
	name         string
	fn           uintptr
	grid, block  [3]uint32
	shared       uint32
	params       unsafe.Pointer // &program.params[first argument]
	first, nargs int            // its arguments' slots in program.vals
	bufs         []string       // the buffer each argument names, "" for values
	lib          *libCall       // a library op's call, nil for a kernel
}

// newProgram loads the modules, allocates and initialises the buffers and
// prepares the launch lists. It runs on the driver thread. On error,
// everything made so far is released.
func newProgram(c *Context, modules map[string][]byte, bufs []Buffer, lists ...[]Launch) (_ *program, err error) {
	if err := validate(modules, bufs, lists...); err != nil {
		return nil, err
	}
	p := &program{c: c, modules: map[string]uintptr{}, ptrs: map[string]uint64{}, sizes: map[string]int64{}}
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	for name, img := range modules {
		m, err := c.moduleLoad(name, img)
		if err != nil {
			return nil, err
		}
		p.modules[name] = m
	}
	if err := p.allocBuffers(bufs); err != nil {
		return nil, err
	}
	if hasLibraryOps(lists) {
		lib, err := c.libraries()
		if err != nil {
			return nil, fmt.Errorf("the plan calls cuDNN: %w", err)
		}
		d, err := newDNN(c, lib, 0)
		if err != nil {
			return nil, err // newDNN released what it made
		}
		p.dnn = d
	}
	nargs := 0
	for _, ls := range lists {
		for _, l := range ls {
			nargs += len(l.Args)
		}
	}
	p.vals = make([]uint64, nargs+1) // +1: a launch without arguments still has an array
	p.params = make([]unsafe.Pointer, nargs+1)
	for i := range p.vals {
		p.params[i] = unsafe.Pointer(&p.vals[i])
	}
	// The driver reads params, and params holds Go pointers into vals:
	// pinned, neither may move or be freed while the program lives.
	p.pin.Pin(&p.vals[0])
	p.pin.Pin(&p.params[0])
	if err := p.prepare(lists); err != nil {
		return nil, err
	}
	return p, nil
}

// allocBuffers allocates each buffer on the device, copies its Init there
// or zeroes it.
func (p *program) allocBuffers(bufs []Buffer) error {
	c := p.c
	for _, b := range bufs {
		ptr, err := c.memAlloc(b.Bytes)
		if err != nil {
			return fmt.Errorf("buffer %s (%d bytes): %w", b.Name, b.Bytes, err)
		}
		p.ptrs[b.Name], p.sizes[b.Name] = ptr, b.Bytes
		if b.Init != nil {
			err = c.htod(ptr, unsafe.Pointer(&b.Init[0]), b.Bytes, 0)
			if err == nil {
				err = c.ctxSync() // Init is Go memory: wait until the copy has read it
			}
			runtime.KeepAlive(b.Init)
		} else {
			err = c.memset(ptr, 0, b.Bytes)
		}
		if err != nil {
			return fmt.Errorf("buffer %s: %w", b.Name, err)
		}
	}
	return nil
}

// prepare resolves each launch's kernel (once per module and name) and
// writes its arguments into the program's pinned argument slots, in
// order: buffers as their device pointers.
func (p *program) prepare(lists [][]Launch) error {
	c := p.c
	var err error
	fns := map[[2]string]uintptr{}
	slot := 0
	for _, ls := range lists {
		prepared := make([]launch, len(ls))
		for i, l := range ls {
			if l.Module == LibraryModule {
				lc, err := p.prepareOp(l)
				if err != nil {
					return fmt.Errorf("%s %s: %w", LibraryModule, l.Kernel, err)
				}
				prepared[i] = launch{name: LibraryModule + " " + l.Kernel, first: slot, nargs: len(l.Args), bufs: make([]string, len(l.Args)), lib: lc}
				for j, a := range l.Args {
					if b, ok := a.(Buf); ok {
						p.vals[slot+j], prepared[i].bufs[j] = p.ptrs[b.Name], b.Name
					}
				}
				slot += len(l.Args)
				continue
			}
			key := [2]string{l.Module, l.Kernel}
			fn, ok := fns[key]
			if !ok {
				if fn, err = c.function(p.modules[l.Module], l.Kernel); err != nil {
					return fmt.Errorf("module %s: %w", l.Module, err)
				}
				fns[key] = fn
			}
			pl := launch{name: l.Kernel, fn: fn, grid: l.Grid, block: l.Block, shared: l.SharedBytes,
				params: unsafe.Pointer(&p.params[slot]), first: slot, nargs: len(l.Args), bufs: make([]string, len(l.Args))}
			for j, a := range l.Args {
				v := &p.vals[slot+j]
				switch a := a.(type) {
				case Buf:
					*v, pl.bufs[j] = p.ptrs[a.Name], a.Name
				case int32:
					*v = uint64(uint32(a))
				case uint32:
					*v = uint64(a)
				case float32:
					*v = uint64(math.Float32bits(a))
				case uint64:
					*v = a
				}
			}
			slot += len(l.Args)
			prepared[i] = pl
		}
		p.lists = append(p.lists, prepared)
	}
	return nil
}

// slots returns the argument slots that name buffer name, which a step
// points at the uploaded batch instead.
func (p *program) slots(name string) []int {
	var s []int
	for _, ls := range p.lists {
		for _, l := range ls {
			for j, b := range l.bufs {
				if b == name {
					s = append(s, l.first+j)
				}
			}
		}
	}
	return s
}

// enqueue launches list i on stream, in order.
func (p *program) enqueue(i int, stream uintptr) error {
	for k := range p.lists[i] {
		l := &p.lists[i][k]
		if l.lib != nil {
			if err := p.call(l, stream); err != nil {
				return fmt.Errorf("%s: %w", l.name, err)
			}
			continue
		}
		if err := p.c.launch(l.fn, l.grid, l.block, l.shared, stream, l.params); err != nil {
			return fmt.Errorf("kernel %s: %w", l.name, err)
		}
	}
	return nil
}

// release frees the buffers and unloads the modules, on the driver thread.
func (p *program) release() error {
	var errs []error
	for name, ptr := range p.ptrs {
		if err := p.c.memFree(ptr); err != nil {
			errs = append(errs, fmt.Errorf("buffer %s: %w", name, err))
		}
	}
	for name, m := range p.modules {
		if err := p.c.moduleUnload(m); err != nil {
			errs = append(errs, fmt.Errorf("module %s: %w", name, err))
		}
	}
	if p.dnn != nil {
		if err := p.dnn.close(); err != nil {
			errs = append(errs, err)
		}
		p.dnn = nil
	}
	p.ptrs, p.modules = nil, nil
	p.pin.Unpin()
	return errors.Join(errs...)
}
