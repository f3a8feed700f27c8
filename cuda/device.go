package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/headspace-bench/headspace/batching"
	"github.com/headspace-bench/headspace/device"
)

// DeviceConfig configures a CUDA Device.
type DeviceConfig struct {
	// Plan is the training step the device runs, for one batch shape.
	Plan Plan
	// PlanFor, if not nil, replaces Plan: it gives the plan for batches of
	// batch samples of 3×side×side values, and the device builds it on the
	// first upload of each new shape (the Net's, from cuda/kernels, for
	// whatever batch and crop the caller's pipeline makes).
	PlanFor func(batch, side int) (Plan, error)
	// PlanForSample, if not nil, replaces PlanFor: it gives the plan for
	// batches of batch samples of sampleLen values of any layout, such as
	// the device transform's (cuda/kernels.NetPlanDevice), whose samples
	// are a header and raw pixels rather than 3×side×side values.
	PlanForSample func(batch, sampleLen int) (Plan, error)
	// Graphs captures each launch list (Convert, Step) once per device
	// buffer into a CUDA Graph (stream capture) and replays it with one
	// cuGraphLaunch per step, instead of one cuLaunchKernel per kernel:
	// the launch overhead the document's "CUDA Graph help[s] reduce".
	// The work and its order are the same.
	Graphs bool
	// Pinned stages uploads in page-locked host memory (cuMemHostAlloc),
	// as DataLoader(pin_memory=True) does; false copies from the batch's
	// own pageable memory.
	Pinned bool
	// Decode, if not nil, decodes the batches that carry JPEG files
	// (batching.Batch.JPEG, --decoder nvjpeg) on the GPU.
	Decode *DeviceDecode
}

// DeviceDecode is how a Device uploads a batch of JPEG files (--decoder
// nvjpeg): it copies the labels, then each sample's header (the first
// Header bytes of its Pix slot, the host's random draws) and decodes its
// JPEG after it with Decoder.DecodeSamples, into the batch's uint8 device
// buffer, so the device transform's kernels find there what --device-crop
// uploads for the decoded images. The pixels never exist on the host.
// Stats count the decode's time (its host stage included) as the upload's
// time and the files' bytes as the upload's bytes.
type DeviceDecode struct {
	Decoder       *JPEGDecoder // from NewJPEGSampleDecoder, with room for a batch
	Width, Height int          // every image's size, the dataset's raw size
	Header        int          // bytes of a sample's header
}

// Device is a device.Device on a CUDA GPU. Uploads run on a copy stream,
// steps on a compute stream, ordered by events: an upload overlaps the
// step before it, a step waits for its batch's copy, and a pooled device
// buffer is overwritten only after the steps that used it. Stats are
// measured on the GPU with events (cuEventElapsedTime).
//
// Each step runs the plan's Step launches; on a uint8 batch (placement
// device) it first runs the Convert launches, whose time Stats counts in
// ConvertTime. The launches that name the plan's Input, InputU8 and Labels
// buffers read the uploaded batch where it lies.
//
// A cancelled context is noticed between driver calls; a wait for the GPU
// itself (at most one step, in Step or Sync) runs to its end.
type Device struct {
	c       *Context
	plan    Plan
	planFor func(batch, sampleLen int) (Plan, error)
	decode  *DeviceDecode
	headers [][]byte // the headers of the batch being decoded
	shape   [2]int   // batch and values per sample of the plan built
	pinned  bool
	prog    *program
	graphs  bool
	execs   map[graphKey]uintptr // the captured graphs, by batch buffer and list

	copyS, compS               uintptr
	inPtr                      uint64 // the plan's Input buffer, the conversion's output
	inBytes, u8Bytes, lblBytes int64
	inSlots, u8Slots, lblSlots []int

	staging                  [2]staging
	nextStaging              int
	free, all                []*buffer
	uploads, converts, steps ring
	prevStep                 uintptr // end event of the last step launched
	stats                    device.Stats
	err                      error // a failure in Free, reported by the next call
	closed                   bool

	// The arguments and results of the operation running on the driver
	// thread: the operations are method values made once, so that a
	// step allocates nothing.
	argBatch                         *batching.Batch
	argBuf, resBuf                   *buffer
	resErr                           error
	lossVal                          float32
	uploadOp, stepOp, freeOp, syncOp func()
}

// graphKey names a captured graph: launch list list of the program, with
// the batch in the device buffer at ptr (the graph holds its pointers).
type graphKey struct {
	ptr  uint64
	list int
}

// buffer is a batch on the device: data, then labels at labelOff.
type buffer struct {
	dev       *Device
	ptr       uint64
	size      int64 // bytes allocated
	bytes     int64 // the batch's payload (batching.Batch.Bytes)
	labelOff  int64
	dtype     batching.DType
	uploaded  uintptr // event: its copy is done (copy stream)
	lastUse   uintptr // event: the steps on it are done (compute stream), recorded by Free
	used, out bool
}

func (b *buffer) Bytes() int64 { return b.bytes }

// staging is a page-locked host buffer and the event after its last copy.
type staging struct {
	mem  []byte
	done uintptr
	used bool
}

// ring is a ring of start/end event pairs whose elapsed times are added to
// total once the GPU has passed them.
type ring struct {
	recs  []timing
	next  int
	total *time.Duration
}

type timing struct {
	start, end uintptr
	pending    bool
}

const ringSize = 8

// NewDevice makes a Device on c that runs cfg.Plan, or cfg.PlanFor's plans.
func NewDevice(c *Context, cfg DeviceConfig) (*Device, error) {
	d := &Device{c: c, pinned: cfg.Pinned, planFor: cfg.PlanForSample, graphs: cfg.Graphs, decode: cfg.Decode, execs: map[graphKey]uintptr{}}
	if dd := cfg.Decode; dd != nil && (dd.Decoder == nil || dd.Width <= 0 || dd.Height <= 0 || dd.Header <= 0) {
		return nil, fmt.Errorf("cuda: decode on the device needs a decoder, an image size and a header length (%dx%d, %d bytes)", dd.Width, dd.Height, dd.Header)
	}
	if cfg.Graphs {
		if err := c.lib.graphsErr(); err != nil {
			return nil, err
		}
	}
	if d.planFor == nil && cfg.PlanFor != nil {
		d.planFor = func(batch, sampleLen int) (Plan, error) {
			side := int(math.Round(math.Sqrt(float64(sampleLen) / 3)))
			if 3*side*side != sampleLen {
				return Plan{}, fmt.Errorf("a sample of %d values is not 3×side×side", sampleLen)
			}
			return cfg.PlanFor(batch, side)
		}
	}
	if d.planFor == nil {
		if err := d.checkPlan(cfg.Plan); err != nil {
			return nil, err
		}
	}
	d.uploadOp, d.stepOp, d.freeOp = d.upload, d.step, d.release
	d.syncOp = func() { d.resErr = d.syncAll() }
	d.uploads.total, d.converts.total, d.steps.total = &d.stats.UploadTime, &d.stats.ConvertTime, &d.stats.StepTime
	err := c.run(func() error { return d.setup(cfg) })
	if err != nil {
		d.closed = true
		c.run(d.releaseAll)
		return nil, fmt.Errorf("cuda: device setup: %w", err)
	}
	return d, nil
}

// setup loads a fixed plan, makes the copy and compute streams and the
// events of the timing rings and the staging buffers, on the driver
// thread.
func (d *Device) setup(cfg DeviceConfig) error {
	c := d.c
	var err error
	if d.planFor == nil {
		if err := d.load(cfg.Plan); err != nil {
			return err
		}
	}
	if d.copyS, err = c.streamCreate(); err != nil {
		return err
	}
	if d.compS, err = c.streamCreate(); err != nil {
		return err
	}
	for _, r := range d.rings() {
		r.recs = make([]timing, ringSize)
		for i := range r.recs {
			if r.recs[i].start, err = c.eventCreate(); err != nil {
				return err
			}
			if r.recs[i].end, err = c.eventCreate(); err != nil {
				return err
			}
		}
	}
	for i := range d.staging {
		if d.staging[i].done, err = c.eventCreate(); err != nil {
			return err
		}
	}
	return nil
}

// checkPlan checks that p names its input, labels and (if it converts)
// uint8 input buffers.
func (d *Device) checkPlan(p Plan) error {
	if _, ok := p.Buffer(p.Input); !ok {
		return fmt.Errorf("cuda: plan: no input buffer %q", p.Input)
	}
	if _, ok := p.Buffer(p.Labels); !ok {
		return fmt.Errorf("cuda: plan: no labels buffer %q", p.Labels)
	}
	if _, ok := p.Buffer(p.InputU8); len(p.Convert) > 0 && !ok {
		return fmt.Errorf("cuda: plan: no uint8 input buffer %q", p.InputU8)
	}
	return nil
}

// load builds plan p's program, on the driver thread, replacing the one
// before (after the GPU has finished with it).
func (d *Device) load(p Plan) error {
	if d.prog != nil {
		if err := d.syncAll(); err != nil {
			return err
		}
		err := errors.Join(d.dropGraphs(), d.prog.release())
		d.prog = nil
		if err != nil {
			return err
		}
		// Pooled buffers are of the old shape: give their memory back.
		keep := d.all[:0]
		for _, b := range d.all {
			if b.out {
				keep = append(keep, b)
				continue
			}
			err = errors.Join(err, d.freeBuffer(b))
		}
		d.all, d.free = keep, d.free[:0]
		if err != nil {
			return err
		}
	}
	prog, err := newProgram(d.c, p.Modules, p.Buffers, p.Convert, p.Step)
	if err != nil {
		return err
	}
	d.prog, d.plan = prog, p
	in, _ := p.Buffer(p.Input)
	lbl, _ := p.Buffer(p.Labels)
	u8, _ := p.Buffer(p.InputU8)
	d.inBytes, d.lblBytes, d.u8Bytes = in.Bytes, lbl.Bytes, 0
	if len(p.Convert) > 0 {
		d.u8Bytes = u8.Bytes
	}
	d.inPtr = prog.ptrs[p.Input]
	d.inSlots, d.u8Slots, d.lblSlots = prog.slots(p.Input), prog.slots(p.InputU8), prog.slots(p.Labels)
	return nil
}

// reshape builds the plan for b's shape if it is not the one built.
func (d *Device) reshape(b *batching.Batch) error {
	if d.planFor == nil || (d.prog != nil && d.shape == [2]int{b.Size, b.SampleLen}) {
		return nil
	}
	p, err := d.planFor(b.Size, b.SampleLen)
	if err != nil {
		return fmt.Errorf("the plan for batch %d of %d-value samples: %w", b.Size, b.SampleLen, err)
	}
	if err := d.checkPlan(p); err != nil {
		return err
	}
	if err := d.c.run(func() error { return d.load(p) }); err != nil {
		return fmt.Errorf("the plan for batch %d of %d-value samples: %w", b.Size, b.SampleLen, err)
	}
	d.shape = [2]int{b.Size, b.SampleLen}
	return nil
}

// Name implements device.Device: "cuda:" and the GPU's name.
func (d *Device) Name() string { return "cuda:" + d.c.info.Name }

func (d *Device) usable(ctx context.Context, what string) error {
	switch {
	case d.closed:
		return fmt.Errorf("cuda: %s on a closed device", what)
	case d.c.done.Load():
		return errClosedContext
	case d.err != nil:
		err := d.err
		d.err = nil
		return err
	}
	return ctx.Err()
}

// Upload implements device.Device.
func (d *Device) Upload(ctx context.Context, b *batching.Batch) (device.Buffer, error) {
	buf, err := d.uploadBatch(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("cuda: upload of batch %d: %w", b.Index, err)
	}
	return buf, nil
}

// uploadBatch is Upload without its errors' prefix.
func (d *Device) uploadBatch(ctx context.Context, b *batching.Batch) (*buffer, error) {
	if err := d.usable(ctx, "upload"); err != nil {
		return nil, err
	}
	if err := d.reshape(b); err != nil {
		return nil, err
	}
	lbl := int64(len(b.Labels)) * 4
	switch {
	case b.DType == batching.Float32 && int64(len(b.Data))*4 != d.inBytes:
		return nil, fmt.Errorf("%d float32 bytes, the plan's input %s holds %d", len(b.Data)*4, d.plan.Input, d.inBytes)
	case b.DType == batching.Uint8 && d.u8Bytes == 0:
		return nil, errors.New("a uint8 batch, and the plan has no conversion")
	case b.DType == batching.Uint8 && int64(len(b.Pix)) != d.u8Bytes:
		return nil, fmt.Errorf("%d uint8 bytes, the plan's input %s holds %d", len(b.Pix), d.plan.InputU8, d.u8Bytes)
	case lbl != d.lblBytes:
		return nil, fmt.Errorf("%d label bytes, the plan's %s holds %d", lbl, d.plan.Labels, d.lblBytes)
	}
	if b.JPEG != nil {
		return d.uploadJPEG(b)
	}
	d.argBatch = b
	err := d.do(d.uploadOp)
	d.argBatch = nil
	buf := d.resBuf
	d.resBuf = nil
	return buf, err
}

// do runs op, one of the prepared operations, on the driver thread and
// returns (and clears) the error it left in resErr.
func (d *Device) do(op func()) error {
	d.c.th.do(op)
	err := d.resErr
	d.resErr = nil
	return err
}

// uploadJPEG uploads a batch of JPEG files: its labels are copied, its
// images decoded on the GPU after their headers (DeviceDecode).
func (d *Device) uploadJPEG(b *batching.Batch) (*buffer, error) {
	dd := d.decode
	switch {
	case dd == nil:
		return nil, errors.New("a batch of JPEG files, and the device decodes none (no DeviceConfig.Decode)")
	case b.DType != batching.Uint8 || len(b.JPEG) != b.Size:
		return nil, fmt.Errorf("%d JPEG files for %d %s samples, want one per uint8 sample", len(b.JPEG), b.Size, b.DType)
	case b.SampleLen < dd.Header:
		return nil, fmt.Errorf("samples of %d bytes hold no header of %d", b.SampleLen, dd.Header)
	}
	labels := bytesOf(b.Labels)
	off := (int64(len(b.Pix)) + 255) &^ 255
	buf, err := d.jpegTarget(b, labels, off)
	if err != nil {
		return nil, err
	}
	d.headers = d.headers[:0]
	files := int64(0)
	for j := range b.Size {
		d.headers = append(d.headers, b.Pix[j*b.SampleLen:j*b.SampleLen+dd.Header])
		files += int64(len(b.JPEG[j]))
	}
	took, decodeErr := dd.Decoder.DecodeSamples(d.headers, b.JPEG, buf.ptr, int64(b.SampleLen), dd.Width, dd.Height)
	clear(d.headers)
	err = d.c.run(func() error {
		err := decodeErr
		if err == nil {
			// The decode has finished (DecodeSamples waits for it): the
			// step waits for the labels' copy alone.
			err = d.c.eventRecord(buf.uploaded, d.copyS)
		}
		if err != nil {
			d.putBack(buf)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	buf.bytes = files + int64(len(labels))
	d.stats.Uploads++
	d.stats.UploadBytes += buf.bytes
	d.stats.UploadTime += took
	return buf, nil
}

// jpegTarget is the device buffer a batch of JPEG files decodes into,
// once the steps that read it are done, with the batch's labels copied to
// it at off.
func (d *Device) jpegTarget(b *batching.Batch, labels []byte, off int64) (*buffer, error) {
	var buf *buffer
	err := d.c.run(func() error {
		var err error
		if buf, err = d.get(b.DType, off+int64(len(labels))); err != nil {
			return err
		}
		buf.labelOff = off
		if buf.used {
			// The decode overwrites the buffer, on the decoder's own
			// stream: after the steps that read it.
			err = d.c.eventSync(buf.lastUse)
		}
		if err == nil {
			err = d.c.htod(buf.ptr+uint64(off), unsafe.Pointer(&labels[0]), int64(len(labels)), d.copyS)
		}
		if err != nil {
			d.putBack(buf)
		}
		return err
	})
	return buf, err
}

// payload returns the batch's values as bytes.
func payload(b *batching.Batch) []byte {
	if b.DType == batching.Uint8 {
		return b.Pix
	}
	return bytesOf(b.Data)
}

// bytesOf is the memory of s (float32 values or int32 labels) as bytes.
func bytesOf[T float32 | int32](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*4)
}

// upload runs on the driver thread.
func (d *Device) upload() {
	b := d.argBatch
	data, labels := payload(b), bytesOf(b.Labels)
	off := (int64(len(data)) + 255) &^ 255
	size := off + int64(len(labels))
	buf, err := d.get(b.DType, size)
	if err != nil {
		d.resErr = err
		return
	}
	buf.labelOff, buf.bytes = off, b.Bytes()
	if err := d.copyIn(buf, data, labels, off, size); err != nil {
		d.putBack(buf)
		d.resErr = err
		return
	}
	d.stats.Uploads++
	d.stats.UploadBytes += buf.bytes
	d.resBuf = buf
}

// copyIn enqueues the timed copy of data, and labels at off, into buf on
// the copy stream, on the driver thread.
func (d *Device) copyIn(buf *buffer, data, labels []byte, off, size int64) error {
	c := d.c
	if buf.used {
		// The copy overwrites the buffer: after the steps that read it.
		if err := c.streamWait(d.copyS, buf.lastUse); err != nil {
			return err
		}
	}
	t, err := d.uploads.take(d)
	if err != nil {
		return err
	}
	if err := c.eventRecord(t.start, d.copyS); err != nil {
		return err
	}
	if d.pinned {
		err = d.copyPinned(buf, data, labels, off, size)
	} else {
		// From pageable memory the driver stages the copy itself and
		// returns once it has read the source.
		err = c.htod(buf.ptr, unsafe.Pointer(&data[0]), int64(len(data)), d.copyS)
		if err == nil {
			err = c.htod(buf.ptr+uint64(off), unsafe.Pointer(&labels[0]), int64(len(labels)), d.copyS)
		}
	}
	if err == nil {
		err = c.eventRecord(t.end, d.copyS)
	}
	if err != nil {
		return err
	}
	t.pending = true
	return c.eventRecord(buf.uploaded, d.copyS)
}

// copyPinned copies data, and labels at off, into buf through the next
// page-locked staging buffer (size bytes, grown if needed) once its
// previous copy has read it, and records when this copy has.
func (d *Device) copyPinned(buf *buffer, data, labels []byte, off, size int64) error {
	c := d.c
	s := &d.staging[d.nextStaging]
	d.nextStaging = (d.nextStaging + 1) % len(d.staging)
	if s.used {
		if err := c.eventSync(s.done); err != nil { // its previous copy has read it
			return err
		}
	}
	if int64(len(s.mem)) < size {
		var err error
		if s.mem != nil {
			err = c.hostFree(s.mem)
			s.mem = nil
		}
		if err == nil {
			s.mem, err = c.hostAlloc(int(size))
		}
		if err != nil {
			return fmt.Errorf("pinned staging of %d bytes: %w", size, err)
		}
	}
	copy(s.mem, data)
	copy(s.mem[off:], labels)
	err := c.htod(buf.ptr, unsafe.Pointer(&s.mem[0]), size, d.copyS)
	if err == nil {
		err = c.eventRecord(s.done, d.copyS)
		s.used = true
	}
	return err
}

// putBack returns buf to the pool unused.
func (d *Device) putBack(buf *buffer) {
	buf.out = false
	d.free = append(d.free, buf)
}

// get takes a buffer of size bytes from the pool, or allocates one.
func (d *Device) get(dt batching.DType, size int64) (*buffer, error) {
	for i, b := range d.free {
		if b.size == size {
			d.free[i] = d.free[len(d.free)-1]
			d.free = d.free[:len(d.free)-1]
			b.out, b.dtype = true, dt
			return b, nil
		}
	}
	ptr, err := d.c.memAlloc(size)
	if err != nil {
		return nil, fmt.Errorf("device buffer of %d bytes: %w", size, err)
	}
	b := &buffer{dev: d, ptr: ptr, size: size, dtype: dt, out: true}
	if b.uploaded, err = d.c.eventCreate(); err == nil {
		b.lastUse, err = d.c.eventCreate()
	}
	d.all = append(d.all, b) // freed by Close whatever happens
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Step implements device.Device.
func (d *Device) Step(ctx context.Context, buf device.Buffer) error {
	b, ok := buf.(*buffer)
	switch {
	case !ok || b == nil || b.dev != d:
		return fmt.Errorf("cuda: step on a buffer of another device (%T)", buf)
	case !b.out:
		return fmt.Errorf("cuda: step on a freed buffer")
	}
	if err := d.usable(ctx, "step"); err != nil {
		return fmt.Errorf("cuda: step: %w", err)
	}
	d.argBuf = b
	err := d.do(d.stepOp)
	d.argBuf = nil
	if err != nil {
		return fmt.Errorf("cuda: step %d: %w", d.stats.Steps, err)
	}
	return nil
}

// step runs on the driver thread.
func (d *Device) step() {
	b, c, p := d.argBuf, d.c, d.prog
	vals := p.vals
	lbl := b.ptr + uint64(b.labelOff)
	for _, s := range d.lblSlots {
		vals[s] = lbl
	}
	in := b.ptr
	if b.dtype == batching.Uint8 {
		for _, s := range d.u8Slots {
			vals[s] = b.ptr
		}
		in = d.inPtr
	}
	for _, s := range d.inSlots {
		vals[s] = in
	}
	err := c.streamWait(d.compS, b.uploaded)
	if err == nil && b.dtype == batching.Uint8 {
		err = d.timed(&d.converts, 0, b.ptr)
	}
	if err == nil {
		err = d.timed(&d.steps, 1, b.ptr)
	}
	if err != nil {
		d.resErr = err
		return
	}
	d.stats.Steps++
	// The host runs at most one step ahead: wait for the one before.
	if d.prevStep != 0 {
		if err := c.eventSync(d.prevStep); err != nil {
			d.resErr = err
			return
		}
	}
	d.prevStep = d.steps.recs[(d.steps.next+ringSize-1)%ringSize].end
	for _, r := range d.rings() {
		if err := r.harvest(d, false); err != nil {
			d.resErr = err
			return
		}
	}
}

// timed enqueues launch list i on the compute stream between the events of
// a record of r.
// With Graphs, the list is captured on first use with the batch at ptr and
// replayed from then on.
func (d *Device) timed(r *ring, i int, ptr uint64) error {
	var exec uintptr
	if d.graphs {
		key := graphKey{ptr, i}
		if exec = d.execs[key]; exec == 0 {
			var err error
			if d.prog.dnn != nil {
				// cuDNN's handles on the stream before the capture, not
				// in it.
				if err := d.prog.dnn.setStream(d.compS); err != nil {
					return err
				}
			}
			if exec, err = d.c.capture(d.compS, func() error { return d.prog.enqueue(i, d.compS) }); err != nil {
				return fmt.Errorf("capturing launch list %d: %w", i, err)
			}
			d.execs[key] = exec
		}
	}
	t, err := r.take(d)
	if err != nil {
		return err
	}
	if err := d.c.eventRecord(t.start, d.compS); err != nil {
		return err
	}
	if exec != 0 {
		err = d.c.graphLaunch(exec, d.compS)
	} else {
		err = d.prog.enqueue(i, d.compS)
	}
	if err != nil {
		return err
	}
	if err := d.c.eventRecord(t.end, d.compS); err != nil {
		return err
	}
	t.pending = true
	return nil
}

// take returns the next record, first waiting for and counting it if it is
// still pending.
func (r *ring) take(d *Device) (*timing, error) {
	t := &r.recs[r.next]
	if t.pending {
		if err := d.c.eventSync(t.end); err != nil {
			return nil, err
		}
		if err := d.count(r, t); err != nil {
			return nil, err
		}
	}
	r.next = (r.next + 1) % len(r.recs)
	return t, nil
}

// harvest counts the pending records whose end the GPU has passed, oldest
// first; with wait it waits for all of them.
func (r *ring) harvest(d *Device, wait bool) error {
	for i := range len(r.recs) {
		t := &r.recs[(r.next+i)%len(r.recs)]
		if !t.pending {
			continue
		}
		if wait {
			if err := d.c.eventSync(t.end); err != nil {
				return err
			}
		} else if done, err := d.c.eventDone(t.end); err != nil || !done {
			return err
		}
		if err := d.count(r, t); err != nil {
			return err
		}
	}
	return nil
}

func (d *Device) count(r *ring, t *timing) error {
	el, err := d.c.elapsed(t.start, t.end)
	if err != nil {
		return err
	}
	*r.total += el
	t.pending = false
	return nil
}

// Free implements device.Device: the buffer returns to the pool, to be
// overwritten only after the steps launched on it.
func (d *Device) Free(buf device.Buffer) {
	b, ok := buf.(*buffer)
	if !ok || b == nil || b.dev != d || !b.out || d.closed || d.c.done.Load() {
		return
	}
	d.argBuf = b
	err := d.do(d.freeOp)
	d.argBuf = nil
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("cuda: free: %w", err)
	}
}

// release runs on the driver thread.
func (d *Device) release() {
	b := d.argBuf
	b.out = false
	d.free = append(d.free, b)
	if err := d.c.eventRecord(b.lastUse, d.compS); err != nil {
		d.resErr = err
		return
	}
	b.used = true
}

// Sync implements device.Device: it waits for every copy and step and
// counts their GPU times.
func (d *Device) Sync(ctx context.Context) error {
	if err := d.usable(ctx, "sync"); err != nil {
		return fmt.Errorf("cuda: sync: %w", err)
	}
	if err := d.do(d.syncOp); err != nil {
		return fmt.Errorf("cuda: sync: %w", err)
	}
	return ctx.Err()
}

// syncAll waits for both streams and counts every pending timing, on the
// driver thread.
func (d *Device) syncAll() error {
	for _, s := range [2]uintptr{d.copyS, d.compS} {
		if err := d.c.streamSync(s); err != nil {
			return err
		}
	}
	for _, r := range d.rings() {
		if err := r.harvest(d, true); err != nil {
			return err
		}
	}
	return nil
}

// rings are the device's timing rings: uploads, conversions and steps.
func (d *Device) rings() [3]*ring { return [3]*ring{&d.uploads, &d.converts, &d.steps} }

// Stats implements device.Device. Times are the GPU's, counted up to the
// last Step or Sync.
func (d *Device) Stats() device.Stats { return d.stats }

// Loss waits for the steps launched and returns the plan's Loss buffer:
// the last step's loss.
func (d *Device) Loss(ctx context.Context) (float32, error) {
	if d.prog == nil || d.plan.Loss == "" {
		return 0, fmt.Errorf("cuda: no plan with a loss buffer has run")
	}
	if err := d.Sync(ctx); err != nil {
		return 0, err
	}
	err := d.c.run(func() error {
		if err := d.c.dtoh(unsafe.Pointer(&d.lossVal), d.prog.ptrs[d.plan.Loss], 4, d.compS); err != nil {
			return err
		}
		return d.c.streamSync(d.compS)
	})
	if err != nil {
		return 0, fmt.Errorf("cuda: reading loss %s: %w", d.plan.Loss, err)
	}
	return d.lossVal, nil
}

// Close implements device.Device: it waits for the GPU, then frees every
// buffer, staging area, event and stream and the plan's modules.
func (d *Device) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	if d.c.done.Load() {
		// The device memory is gone with the context; the program's
		// pinned Go memory is ours to let go (a Pinner collected while
		// pinned panics).
		if d.prog != nil {
			d.prog.pin.Unpin()
		}
		return fmt.Errorf("cuda: close: %w (close devices before their context)", errClosedContext)
	}
	if err := d.c.run(func() error { return errors.Join(d.syncAll(), d.releaseAll()) }); err != nil {
		return fmt.Errorf("cuda: close: %w", err)
	}
	return nil
}

// dropGraphs destroys the captured graphs (their buffers are going), on
// the driver thread.
func (d *Device) dropGraphs() error {
	var errs []error
	for k, e := range d.execs {
		errs = append(errs, d.c.graphExecDestroy(e))
		delete(d.execs, k)
	}
	return errors.Join(errs...)
}

// releaseAll frees everything the device made, on the driver thread.
func (d *Device) releaseAll() error {
	c := d.c
	errs := []error{d.dropGraphs()}
	for _, b := range d.all {
		errs = append(errs, d.freeBuffer(b))
	}
	d.all, d.free = nil, nil
	for i := range d.staging {
		s := &d.staging[i]
		if s.mem != nil {
			errs = append(errs, c.hostFree(s.mem))
		}
		errs = append(errs, ifNZ(s.done, c.eventDestroy))
		s.mem, s.done = nil, 0
	}
	for _, r := range d.rings() {
		for _, t := range r.recs {
			errs = append(errs, ifNZ(t.start, c.eventDestroy), ifNZ(t.end, c.eventDestroy))
		}
		r.recs = nil
	}
	errs = append(errs, ifNZ(d.copyS, c.streamDestroy), ifNZ(d.compS, c.streamDestroy))
	d.copyS, d.compS = 0, 0
	if d.prog != nil {
		errs = append(errs, d.prog.release())
		d.prog = nil
	}
	return errors.Join(errs...)
}

// freeBuffer frees device buffer b's memory and events, on the driver
// thread.
func (d *Device) freeBuffer(b *buffer) error {
	return errors.Join(d.c.memFree(b.ptr), ifNZ(b.uploaded, d.c.eventDestroy), ifNZ(b.lastUse, d.c.eventDestroy))
}
