//go:build !headspace_inject

package inject

// Enabled is false: this binary was built without the headspace_inject
// tag and injects nothing.
const Enabled = false

// Share is always 0 without the headspace_inject tag.
func Share(level string) float64 { return 0 }
