package ladder

import "github.com/headspace-bench/headspace/harness/blocks/level"

// Level is a rung of the caching ladder: what it caches, which stages
// still run and the stage a drop at it is attributed to are the one table
// of package level.
type Level = level.Level

// The levels, as package level names them.
const (
	None    = level.None
	Local   = level.Local
	Encoded = level.Encoded
	Raw     = level.Raw
	Sample  = level.Sample
	Host    = level.Host
	Device  = level.Device
)

// Levels is the document's five levels (level.Levels); OnDiskLevels adds
// encoded (level.OnDiskLevels), RemoteLevels local too (level.RemoteLevels).
var (
	Levels       = level.Levels
	OnDiskLevels = level.OnDiskLevels
	RemoteLevels = level.RemoteLevels
)

// FetchStage is what none adds over encoded (level.FetchStage).
const FetchStage = level.FetchStage

// ParseLevel parses one level name (level.Parse); ParseLevels a
// comma-separated list of them (level.ParseList).
var (
	ParseLevel  = level.Parse
	ParseLevels = level.ParseList
)
