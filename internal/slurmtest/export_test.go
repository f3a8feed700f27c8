//go:build unix

package slurmtest

// Leftovers is c.leftovers, for the tests.
func Leftovers(c *Cluster) []int { return c.leftovers() }
