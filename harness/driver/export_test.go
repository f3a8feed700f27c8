package driver

// The streamed and whole writes Run is made of, for the package's tests
// of their rules.
var (
	Open  = open
	Write = write
)
