//go:build !linux

package s3server

import "syscall"

// childAttr is nil outside Linux: there is no Pdeathsig, so only Close
// stops the server.
func childAttr() *syscall.SysProcAttr { return nil }
