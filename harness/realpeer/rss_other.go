//go:build !linux

package realpeer

import "time"

// samplePeak is -1 outside Linux: there is no /proc to sum a process
// group's resident memory from, and the record leaves peak-rss-B out.
func samplePeak(pgid int, every time.Duration, stop <-chan struct{}) int64 {
	<-stop
	return -1
}
