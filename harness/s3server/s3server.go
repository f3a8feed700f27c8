// Package s3server starts a real S3-compatible object server on 127.0.0.1
// for headspace's remote-data runs and tests: versitygw (Apache-2.0), pinned
// at Version, with its posix backend over a local directory.
//
// The server is a separate process, built once from the Go module proxy
// into a cached bin directory by ci/versitygw.sh (which `make test` and
// `make bench-remote` run); Binary finds it. It is started with keep-alive
// on (without it, every GET opens a new connection, which would measure
// TCP set-up rather than the store), listens on 127.0.0.1 only, and is
// killed and reaped by Close — and, on Linux, by the kernel if headspace
// dies first (Pdeathsig) — so no run leaves a server behind.
//
// There is no mock of S3 in the product path: the loader, the upload
// command and their tests talk to this server.
package s3server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/headspace-bench/headspace/internal/procgroup"
)

// Version is the pinned versitygw release; ci/versitygw.sh builds the same.
const Version = "v1.8.0"

// EnvBinary names the variable that points at a versitygw binary, in place
// of the cached one.
const EnvBinary = "HEADSPACE_VERSITYGW"

// Region is the region the server is started with and clients sign for.
const Region = "us-east-1"

// startTimeout bounds how long Start waits for the server to answer.
const startTimeout = 20 * time.Second

// Binary is the path of the versitygw binary: $HEADSPACE_VERSITYGW, or
// versitygw-<Version> in the cached bin directory ($HEADSPACE_BIN, else
// the user cache directory's headspace/bin). The error says how to get it.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("s3server: %s=%s: %v", EnvBinary, p, err)
		}
		return p, nil
	}
	dir := os.Getenv("HEADSPACE_BIN")
	if dir == "" {
		c := os.Getenv("XDG_CACHE_HOME")
		if c == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("s3server: no cache directory for versitygw: %v", err)
			}
			c = filepath.Join(h, ".cache")
		}
		dir = filepath.Join(c, "headspace", "bin")
	}
	p := filepath.Join(dir, "versitygw-"+Version)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("s3server: versitygw %s is not built (%s missing): run ci/versitygw.sh", Version, p)
	}
	return p, nil
}

// Options configure Start.
type Options struct {
	// Root is the directory whose subdirectories are the buckets; "" makes
	// a temporary one that Close removes. The objects' metadata (ETags,
	// multipart parts) is kept in a sidecar directory beside it,
	// .meta-<base of Root>, so it needs no extended attributes of the
	// file system.
	Root string
	// Binary is the versitygw to run; "" asks Binary.
	Binary string
}

// Server is a running versitygw on 127.0.0.1.
type Server struct {
	// AccessKey and SecretKey are the root credentials it was started
	// with (random per server).
	AccessKey, SecretKey string
	root                 string
	meta                 string // the sidecar directory of object metadata
	tmp                  string // the temporary directory holding both, removed by Close
	addr                 string
	cmd                  *exec.Cmd
	out                  *syncBuffer
	exited               chan struct{}
	once                 sync.Once
	closeErr             error
}

// Start starts a server and returns once it answers HTTP. Cancelling ctx
// before then stops it; after Start returns, only Close does.
func Start(ctx context.Context, o Options) (*Server, error) {
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = Binary(); err != nil {
			return nil, err
		}
	}
	s := &Server{AccessKey: "headspace" + randHex(4), SecretKey: randHex(20), root: o.Root}
	if s.root == "" {
		d, err := os.MkdirTemp("", "headspace-s3-")
		if err != nil {
			return nil, fmt.Errorf("s3server: %v", err)
		}
		s.tmp = d
		s.root, s.meta = filepath.Join(d, "buckets"), filepath.Join(d, "meta")
	} else {
		// Not root+".meta": versitygw refuses a sidecar whose path starts
		// with the root's, as if it were inside it.
		s.meta = filepath.Join(filepath.Dir(filepath.Clean(s.root)), ".meta-"+filepath.Base(s.root))
	}
	for _, d := range []string{s.root, s.meta} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			s.removeRoot()
			return nil, fmt.Errorf("s3server: %v", err)
		}
	}
	// A free port, chosen here: versitygw does not report the port it was
	// given for :0. Another process may take it in between, so retry.
	var last error
	for range 3 {
		port, err := freePort()
		if err != nil {
			s.removeRoot()
			return nil, fmt.Errorf("s3server: %v", err)
		}
		if err := s.start(ctx, bin, port); err != nil {
			last = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		return s, nil
	}
	s.removeRoot()
	return nil, last
}

func (s *Server) start(ctx context.Context, bin string, port int) error {
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.out = new(syncBuffer)
	s.exited = make(chan struct{})
	s.cmd = exec.Command(bin,
		"--port", s.addr,
		"--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", Region,
		"--keep-alive",
		"posix", "--sidecar", s.meta, s.root)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = procgroup.Orphanless()
	s.cmd.Env = serverEnv()
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("s3server: start %s: %v", bin, err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.answers() {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("s3server: versitygw on %s exited at start: %s", s.addr, s.out.tail())
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-deadline.C:
			s.kill()
			return fmt.Errorf("s3server: versitygw on %s did not answer within %v: %s", s.addr, startTimeout, s.out.tail())
		case <-tick.C:
		}
	}
}

// answers reports whether the server answers an HTTP request (any status:
// an anonymous request is refused, which is an answer).
func (s *Server) answers() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(s.Endpoint() + "/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

func (s *Server) kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	<-s.exited
}

// Endpoint is the server's URL, http://127.0.0.1:PORT.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Root is the directory holding the buckets.
func (s *Server) Root() string { return s.root }

// Close stops the server, waits for its process to exit, and removes a
// temporary root. It is safe to call more than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		select {
		case <-s.exited:
			s.closeErr = fmt.Errorf("s3server: versitygw on %s had exited: %s", s.addr, s.out.tail())
		default:
			s.kill()
		}
		s.removeRoot()
	})
	return s.closeErr
}

func (s *Server) removeRoot() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// serverEnv is the environment of the server: ours without the VGW_*
// variables, which would override its flags.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if len(kv) >= 4 && kv[:4] == "VGW_" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer keeps the server's output for error messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b.Len() > 1<<16 {
		b.b.Reset()
	}
	return b.b.Write(p)
}

// tail is the last line the server printed, or a note that it printed none.
func (b *syncBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := bytes.TrimSpace(b.b.Bytes())
	if len(t) == 0 {
		return "it printed nothing"
	}
	if i := bytes.LastIndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	}
	return string(t)
}
