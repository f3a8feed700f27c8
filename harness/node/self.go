package node

import (
	"context"
	"fmt"
	"os"
)

// selfRankEnv marks a process started as SelfRank's rank.
const selfRankEnv = "HEADSPACE_SELF_RANK"

// SelfRank is the Exe, Args and Env of Options that start this very
// binary as a rank: for a test binary, which cannot run `headspace rank`,
// to be its own ranks. Its TestMain must call ServeIfSelfRank first.
func SelfRank() (exe string, args, env []string) {
	return os.Args[0], []string{"-test.run=^$"}, []string{selfRankEnv + "=1"}
}

// ServeIfSelfRank serves as a rank on stdin and stdout and exits, when
// this process was started by SelfRank; otherwise it returns at once.
func ServeIfSelfRank() {
	if os.Getenv(selfRankEnv) != "1" {
		return
	}
	if err := ServeRank(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
