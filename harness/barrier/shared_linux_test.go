package barrier

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sharedEnv makes the test binary a member of the shared barrier:
// "ranks:rank:steps", its memory on fd 3.
const sharedEnv = "HEADSPACE_BARRIER_SHARED"

func serveShared() {
	v := os.Getenv(sharedEnv)
	if v == "" {
		return
	}
	f := strings.Split(v, ":")
	n, _ := strconv.Atoi(f[0])
	r, _ := strconv.Atoi(f[1])
	steps, _ := strconv.Atoi(f[2])
	m, err := OpenShared(os.NewFile(3, "barrier"), n, r)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for range steps {
		if err := m.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

// startShared starts members of a shared barrier of n ranks, each
// waiting steps times, for the ranks in started.
func startShared(t testing.TB, s *Shared, n, steps int, started []int) []*exec.Cmd {
	t.Helper()
	var cmds []*exec.Cmd
	for _, r := range started {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d:%d", sharedEnv, n, r, steps))
		cmd.ExtraFiles = []*os.File{s.File()}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// TestSharedLockstep: 4 member processes pass 200 steps of the shared
// barrier, and the parent counts them.
func TestSharedLockstep(t *testing.T) {
	s, err := NewShared(4)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, cmd := range startShared(t, s, 4, 200, []int{0, 1, 2, 3}) {
		if err := cmd.Wait(); err != nil {
			t.Errorf("member: %v", err)
		}
	}
	if got := s.Steps(); got != 200 {
		t.Errorf("steps = %d, want 200", got)
	}
}

// TestSharedTimeout: a rank that never arrives is named by Watch's
// timeout, which aborts the barrier: the others' Wait fails and they
// exit.
func TestSharedTimeout(t *testing.T) {
	s, err := NewShared(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmds := startShared(t, s, 3, 5, []int{0, 2}) // rank 1 never starts
	err = s.Watch(make(chan struct{}), 0, 300*time.Millisecond, 10*time.Millisecond, nil)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "rank 1 did not reach") {
		t.Errorf("Watch = %v, want a timeout naming rank 1", err)
	}
	for _, cmd := range cmds {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err == nil {
				t.Error("a member passed an aborted barrier")
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Error("a member still waits 30 s after the abort")
		}
	}
}

// BenchmarkSharedBarrier is one step of the shared-memory barrier at 2
// and 8 rank processes (ns/op per step; the goal is under 50 µs at 8).
func BenchmarkSharedBarrier(b *testing.B) {
	for _, n := range []int{2, 8} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			s, err := NewShared(n)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ranks := make([]int, n)
			for i := range ranks {
				ranks[i] = i
			}
			cmds := startShared(b, s, n, b.N+1, ranks)
			for s.Steps() < 1 {
				time.Sleep(100 * time.Microsecond)
			}
			b.ResetTimer()
			for _, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					b.Error(err)
				}
			}
			b.StopTimer()
		})
	}
}
