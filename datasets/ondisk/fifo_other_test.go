//go:build !unix

package ondisk

import "errors"

// mkfifo makes a named pipe at p: not here.
func mkfifo(p string) error { return errors.New("no named pipes here") }
