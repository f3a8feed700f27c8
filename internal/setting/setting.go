// Package setting is the neutral type of a setting that changes a
// number: a key and its value, as the blocks that know a setting (the
// loader's pipeline, the network link, the machine's environment) state
// it and a result file records it, one configuration line "key: value".
//
// It is its own small package, below everything, so that a block can say
// what it is set to without importing the result files' writer
// (harness/resultfile, whose Config is this type): what a key may
// look like is checked where a file is written, once.
package setting

// Setting is one setting: Key, a lower-case word without spaces (the Go
// benchmark format's rule for configuration keys), and Value, one
// non-empty line.
type Setting struct{ Key, Value string }
