//go:build !linux

package ondisk

func processCPU() int64 { return 0 }
