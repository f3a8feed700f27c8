package ownloop

import (
	"context"
	"errors"
	"io"
)

// Exec needs a process group to stop the command's DataLoader workers
// with it, and a pipe beside stdin, stdout and stderr: it is not
// available on Windows.
func Exec(ctx context.Context, cmd Command, s Settings, out io.Writer, onStep func(Step)) (*Run, error) {
	return nil, errors.New("running a training command under the hook needs process groups: Linux or macOS")
}
