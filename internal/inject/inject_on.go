//go:build headspace_inject

package inject

import (
	"os"
	"strconv"
	"strings"
)

// Enabled is true in a binary built with the headspace_inject tag.
const Enabled = true

// Share is the injected slowdown of level, from HEADSPACE_INJECT
// ("raw=0.10"); 0 when it names another level or is not set.
func Share(level string) float64 {
	return share(os.Getenv("HEADSPACE_INJECT"), level)
}

func share(spec, level string) float64 {
	name, v, ok := strings.Cut(spec, "=")
	if !ok || name != level {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f < 10) {
		return 0
	}
	return f
}
