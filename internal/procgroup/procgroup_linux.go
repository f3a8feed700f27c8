package procgroup

import (
	"os"
	"syscall"
)

// Group starts a command in its own process group, killed by the kernel
// when headspace dies.
func Group() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Orphanless starts a command that the kernel kills when headspace dies.
func Orphanless() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// Contained starts a command as Group does, and as the first process of a
// PID namespace of its own, in a user namespace that maps the caller's
// user and group to themselves (the command sees its own ids; nothing
// needs privileges). When that process ends or is killed, the kernel
// kills every process it started — one in a session of its own, or
// orphaned, included — and Pdeathsig kills it when headspace dies: so
// nothing it started outlives even a SIGKILL of headspace. Where
// unprivileged user namespaces are not allowed, starting with it fails:
// start the command with Group instead. Root needs no user namespace for
// a PID namespace, and gets none: in one that maps only its own ids, it
// would lose its access to files that other users own.
func Contained() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}}
}
