package node

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/headspace-bench/headspace/device"
	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
)

// protocolVersion is bumped whenever the messages between the parent and
// its ranks change, so a stale binary fails with a clear message.
const protocolVersion = 1

// maxMessage bounds a message's length, so a corrupt length fails fast.
const maxMessage = 16 << 20

// resultFrame starts a rank's result on its stdout, after the barrier's
// Arrive bytes.
const resultFrame byte = 'R'

// Spec is what a rank receives on stdin when it starts: the run it makes.
type Spec struct {
	Version     int
	Rank, Ranks int
	Level       level.Level
	// Pipeline is the rank's loader; its seed is already the rank's own.
	Pipeline loader.Config
	Device   device.EmulatedConfig
	Steps    int // measured steps
	Warmup   int // steps before them
	// Barrier is BarrierShared where the barrier's memory is the rank's
	// fd 3; otherwise the barrier runs on stdin and stdout.
	Barrier string `json:",omitempty"`
}

// RankResult is what one rank measured over its measured steps.
type RankResult struct {
	Rank      int
	Steps     int
	Batch     int
	Wall      time.Duration // first measured step to the device's last finish
	Compute   time.Duration // the device's step time (AU's numerator)
	InputWait time.Duration // the training loop's wait for its loader
	Barrier   time.Duration // the training loop's wait at the barrier
	// CPU is the rank process's CPU time (user+sys) and RunDelay its
	// threads' run-queue delay over the measured steps; Has… is false
	// where the system cannot say.
	CPU, RunDelay       time.Duration
	HasCPU, HasRunDelay bool
	// From a dataset on disk or in a bucket: bytes read and requests.
	Fetched, Requests int64
}

// AU is MLPerf Storage's accelerator utilisation, compute time over
// total time, in [0, 1].
func (r RankResult) AU() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return r.Compute.Seconds() / r.Wall.Seconds()
}

// StepsPerSec is the rank's measured steps over its wall time.
func (r RankResult) StepsPerSec() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Steps) / r.Wall.Seconds()
}

// writeMessage writes v as a 4-byte little-endian length and JSON.
func writeMessage(w io.Writer, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(js)))
	_, err = w.Write(append(n[:], js...))
	return err
}

// readMessage reads what writeMessage wrote into v.
func readMessage(r io.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > maxMessage {
		return fmt.Errorf("message of %d bytes: more than %d, a corrupt stream", size, maxMessage)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return json.Unmarshal(buf, v)
}

// rankPipeline is cfg as a rank's Spec carries it: what cannot cross a
// pipe (a recorder, a transport, credentials) dropped, the page cache
// left to the parent (which prepares it once per run for every rank),
// and the rank's own seed.
func rankPipeline(cfg loader.Config, rank int) loader.Config {
	c := cfg
	c.Recorder = nil
	c.Link = nil
	c.PageCache = ""
	c.MeasureCPU = false
	c.Bucket.Transport = nil
	c.Bucket.AccessKey, c.Bucket.SecretKey = "", "" // from the environment
	c.Dataset.Seed += uint64(rank)
	return c
}
