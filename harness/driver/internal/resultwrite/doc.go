// Package resultwrite writes result files: a file streamed and resumed
// one record at a time (File), a file written whole (WriteFile,
// WriteFileWith), and the rules for replacing one (CheckReplace). It is
// internal to package driver, so the compiler, not a test, keeps every
// result file written by the one driver (issue 42); package resultfile
// holds the format every package reads.
//
// The output policy is atomicfile's: every write is atomic (the old file
// or the new, whole), under the file's one-writer lock, and never over a
// file that is not a results file of the same setup.
package resultwrite
