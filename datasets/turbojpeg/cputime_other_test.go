//go:build !linux

package turbojpeg

func processCPU() int64 { return 0 }
