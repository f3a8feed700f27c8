//go:build unix

package slurmtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cluster is a running single-node Slurm.
type Cluster struct {
	Dir   string // its files: slurm.conf, the logs, state and spool
	Conf  string // slurm.conf
	procs []*exec.Cmd
}

// Env is the environment a command reaches the cluster with: the
// current one, SLURM_CONF naming the cluster's configuration.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf)
}

// Start starts munged, slurmctld and slurmd with their files under dir
// (which must exist, readable by the job steps) and waits, up to ctx's
// end or 60 s, for the node to be idle. On an error the daemons started
// are stopped, and the error names the daemon and the tail of its log.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	for _, bin := range []string{"munged", "slurmctld", "slurmd", "srun", "sinfo"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("slurm: %s not found (make test-deps installs slurm-wlm and munge): %w", bin, err)
		}
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	for _, d := range []string{"munge", "state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("slurm: %w", err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	sock, err := c.startMunge(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.writeConf(sock); err != nil {
		return nil, err
	}
	if err := c.start("slurmctld", filepath.Join(dir, "slurmctld.out"), "-D", "-i", "-f", c.Conf); err != nil {
		return nil, err
	}
	if err := c.start("slurmd", filepath.Join(dir, "slurmd.out"), "-D", "-f", c.Conf); err != nil {
		return nil, err
	}
	if err := c.waitIdle(ctx); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// startMunge starts munged with a fresh key, waits up to 10 s for its
// socket and returns the socket's path.
func (c *Cluster) startMunge(ctx context.Context) (string, error) {
	key := make([]byte, 1024)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return "", fmt.Errorf("slurm: munge key: %w", err)
	}
	_, err = f.Read(key)
	f.Close()
	if err != nil {
		return "", fmt.Errorf("slurm: munge key: %w", err)
	}
	munge := filepath.Join(c.Dir, "munge")
	keyPath := filepath.Join(munge, "munge.key")
	if err := os.WriteFile(keyPath, key, 0o400); err != nil {
		return "", fmt.Errorf("slurm: munge key: %w", err)
	}
	sock := filepath.Join(munge, "munge.sock")
	if err := c.start("munged", filepath.Join(munge, "munged.out"), "-F", "--force", "--key-file", keyPath, "--socket", sock,
		"--pid-file", filepath.Join(munge, "munged.pid"), "--log-file", filepath.Join(munge, "munged.log"),
		"--seed-file", filepath.Join(munge, "munged.seed")); err != nil {
		return "", err
	}
	if err := waitFor(ctx, 10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		return "", fmt.Errorf("slurm: munged did not make its socket: %w%s", err, tail(filepath.Join(munge, "munged.log")))
	}
	return sock, nil
}

// slurmUser is the user the daemons run as: id -un's answer, else $USER,
// else root.
func slurmUser() string {
	user := "root"
	if u := os.Getenv("USER"); u != "" {
		user = u
	}
	if out, err := exec.Command("id", "-un").Output(); err == nil {
		user = strings.TrimSpace(string(out))
	}
	return user
}

// writeConf writes the cluster's slurm.conf: this host as its one node on
// two free ports, munge through sock, its files under c.Dir.
func (c *Cluster) writeConf(sock string) error {
	ports, err := freePorts(2)
	if err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	host, _, _ = strings.Cut(host, ".")
	conf := fmt.Sprintf(confTemplate, host, ports[0], ports[1], slurmUser(), sock, c.Dir, max(2, runtime.NumCPU()))
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	return nil
}

// confTemplate is slurm.conf; its arguments are the host, slurmctld's and
// slurmd's ports, the user, munge's socket, the cluster's folder and the
// node's CPUs.
const confTemplate = `ClusterName=headspace-test
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=%[4]s
SlurmdUser=%[4]s
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[5]s
StateSaveLocation=%[6]s/state
SlurmdSpoolDir=%[6]s/spool
SlurmctldPidFile=%[6]s/slurmctld.pid
SlurmdPidFile=%[6]s/slurmd.pid
SlurmctldLogFile=%[6]s/slurmctld.log
SlurmdLogFile=%[6]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=300
KillWait=1
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[7]d State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
`

// waitIdle waits, up to ctx's end or 60 s, for sinfo to call the node
// idle; its error carries the tails of slurmctld's and slurmd's logs.
func (c *Cluster) waitIdle(ctx context.Context) error {
	state := ""
	err := waitFor(ctx, 60*time.Second, func() bool {
		cmd := exec.Command("sinfo", "-h", "-N", "-o", "%t")
		cmd.Env = c.Env()
		out, _ := cmd.Output()
		state = strings.TrimSpace(string(out))
		return state == "idle"
	})
	if err != nil {
		return fmt.Errorf("slurm: the node is not idle (sinfo says %q): %w%s%s", state, err, tail(filepath.Join(c.Dir, "slurmctld.log")), tail(filepath.Join(c.Dir, "slurmd.log")))
	}
	return nil
}

// start starts a daemon in the foreground, its output to out.
func (c *Cluster) start(name, out string, args ...string) error {
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("slurm: %s: %w", name, err)
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("slurm: starting %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// Stop stops the cluster: it waits up to 5 s for the job steps'
// slurmstepd to end (they report to slurmd and slurmctld first), stops
// the daemons, newest first (SIGTERM, SIGKILL after 5 s), waits for each,
// and kills whatever of the cluster is left: every process whose
// environment names its slurm.conf (a step's slurmstepd, a task).
func (c *Cluster) Stop() {
	deadline := time.Now().Add(5 * time.Second)
	for len(c.leftovers()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	c.procs = nil
	for _, pid := range c.leftovers() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// leftovers are the processes, other than the daemons Start started and
// this one, whose environment names the cluster's slurm.conf, zombies
// left out (Linux's /proc; none elsewhere).
func (c *Cluster) leftovers() []int {
	mark := []byte("SLURM_CONF=" + c.Conf + "\x00")
	own := map[int]bool{os.Getpid(): true}
	for _, p := range c.procs {
		own[p.Process.Pid] = true
	}
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || own[pid] {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, mark) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// waitFor polls ok every 100 ms until it holds, ctx ends or limit passes.
func waitFor(ctx context.Context, limit time.Duration, ok func() bool) error {
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// freePorts are n TCP ports free on 127.0.0.1 now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tail is the last lines of a log, for an error ("" where unreadable).
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return "\n--- " + path + ":\n" + strings.Join(lines, "\n")
}
