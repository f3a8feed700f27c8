package barrier

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// memberEnv makes the test binary a member process that waits at the
// barrier the given number of times on stdin and stdout.
const memberEnv = "HEADSPACE_BARRIER_MEMBER"

func TestMain(m *testing.M) {
	serveShared()
	if v := os.Getenv(memberEnv); v != "" {
		n, _ := strconv.Atoi(v)
		mb := NewMember(os.Stdout, bufio.NewReader(os.Stdin))
		for range n {
			if err := mb.Wait(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// node is n member processes of the test binary, each waiting steps times.
type node struct {
	cmds  []*exec.Cmd
	c     *Coordinator
	wg    sync.WaitGroup
	errMu sync.Mutex
	errs  []error
}

func startNode(t testing.TB, n, steps int, timeout time.Duration) *node {
	t.Helper()
	nd := &node{}
	to := make([]io.Writer, n)
	outs := make([]io.Reader, n)
	for r := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", memberEnv, steps))
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		to[r], outs[r] = in, out
		nd.cmds = append(nd.cmds, cmd)
	}
	c, err := New(to, timeout)
	if err != nil {
		t.Fatal(err)
	}
	nd.c = c
	for r := range n {
		nd.wg.Add(1)
		go func() {
			defer nd.wg.Done()
			br := bufio.NewReader(outs[r])
			for {
				b, err := br.ReadByte()
				if err != nil {
					return // EOF: the member is done
				}
				if b != Arrive {
					nd.fail(fmt.Errorf("rank %d sent %q", r, b))
					return
				}
				if _, err := c.Arrive(r); err != nil {
					nd.fail(err)
					return
				}
			}
		}()
	}
	return nd
}

func (nd *node) fail(err error) {
	nd.errMu.Lock()
	nd.errs = append(nd.errs, err)
	nd.errMu.Unlock()
}

// wait waits for the members to exit and the readers to end.
func (nd *node) wait(t testing.TB) {
	t.Helper()
	for _, cmd := range nd.cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("member %d: %v", cmd.Process.Pid, err)
		}
	}
	nd.wg.Wait()
	nd.c.Stop()
	for _, err := range nd.errs {
		t.Error(err)
	}
}

// TestLockstep: 4 member processes pass 50 steps of the barrier together,
// and the coordinator counts every step.
func TestLockstep(t *testing.T) {
	nd := startNode(t, 4, 50, time.Minute)
	nd.wait(t)
	if got := nd.c.Steps(); got != 50 {
		t.Errorf("steps released = %d, want 50", got)
	}
	if err := nd.c.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
}

// TestTimeoutNamesRank: a rank that never arrives makes the step fail
// with an error naming it, and later arrivals are refused.
func TestTimeoutNamesRank(t *testing.T) {
	var w0, w1, w2 strings.Builder
	c, err := New([]io.Writer{&w0, &w1, &w2}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, r := range []int{0, 2} {
		if _, err := c.Arrive(r); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-c.Failed():
	case <-time.After(30 * time.Second):
		t.Fatal("the barrier did not time out")
	}
	err = c.Err()
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "rank 1 did not reach") {
		t.Errorf("Err = %v, want a timeout naming rank 1", err)
	}
	if w0.Len() != 0 || w2.Len() != 0 {
		t.Errorf("ranks were released: %q %q", w0.String(), w2.String())
	}
	if _, err := c.Arrive(1); err == nil {
		t.Error("Arrive after the failure succeeded")
	}
}

// TestReleaseAndTwice: the last arrival releases every rank with Go; a
// rank arriving twice in one step is a protocol error.
func TestReleaseAndTwice(t *testing.T) {
	var w0, w1 strings.Builder
	c, err := New([]io.Writer{&w0, &w1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rel, err := c.Arrive(0); err != nil || rel {
		t.Fatalf("first arrival: released %v, %v", rel, err)
	}
	if _, err := c.Arrive(0); err == nil {
		t.Error("a second arrival of rank 0 in one step was accepted")
	}
	if rel, err := c.Arrive(1); err != nil || !rel {
		t.Fatalf("last arrival: released %v, %v", rel, err)
	}
	if w0.String() != "G" || w1.String() != "G" || c.Steps() != 1 {
		t.Errorf("after all arrived: %q %q, steps %d; want G G 1", w0.String(), w1.String(), c.Steps())
	}
	if _, err := New(nil, 0); err == nil {
		t.Error("New with no ranks succeeded")
	}
}

// TestMemberParentGone: a member whose parent closed its pipe fails.
func TestMemberParentGone(t *testing.T) {
	var to strings.Builder
	m := NewMember(&to, bufio.NewReader(strings.NewReader("")))
	if err := m.Wait(); err == nil || !strings.Contains(err.Error(), "parent has gone") {
		t.Errorf("Wait = %v, want the parent gone", err)
	}
	m = NewMember(&to, bufio.NewReader(strings.NewReader("X")))
	if err := m.Wait(); err == nil {
		t.Error("Wait accepted a byte other than Go")
	}
}

// BenchmarkBarrier is one step of the barrier at 8 rank processes: every
// rank arrives, the parent releases all (ns/op per step; the goal is
// under 50 µs).
func BenchmarkBarrier(b *testing.B) {
	for _, n := range []int{2, 8} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			nd := startNode(b, n, b.N+1, time.Minute)
			// The first step waits for the processes to start.
			for nd.c.Steps() < 1 && nd.c.Err() == nil {
				time.Sleep(100 * time.Microsecond)
			}
			b.ResetTimer()
			nd.wait(b)
			b.StopTimer()
		})
	}
}
