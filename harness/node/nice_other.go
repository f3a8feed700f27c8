//go:build unix && !linux

package node

// nicenessOf is the nice value from syscall.Getpriority's result, which
// the BSDs and macOS return as is.
func nicenessOf(p int) int { return p }
