package barrier

import "errors"

// ErrNoShared is returned where the shared-memory barrier does not exist
// (outside Linux): the pipe barrier (Coordinator, Member) serves there.
var ErrNoShared = errors.New("barrier: no shared-memory barrier on this system")

// The layout of the shared barrier's memory: 32-bit words.
const (
	wordCount = 0  // ranks arrived this step
	wordGen   = 1  // the step released last (generation)
	wordAbort = 2  // 1 once the parent has failed the barrier
	wordRanks = 16 // rank r's slot: the generation it waits to pass
	// sharedSize is the memory's size: room for maxShared ranks.
	sharedSize = 4096
	// MaxShared is the most ranks the shared barrier holds.
	MaxShared = sharedSize/4 - wordRanks
)
