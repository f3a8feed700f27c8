//go:build !race

package turbojpeg

const raceEnabled = false
