package workloads

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/headspace-bench/headspace/harness/level"
	"github.com/headspace-bench/headspace/harness/loader"
	"github.com/headspace-bench/headspace/harness/merge"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// The configuration keys a sharded sweep records so that `headspace
// merge` can enumerate its points: the sweep's kind, its dimensions, its
// runs per point and its number of shards. They are the same in every
// shard of one sweep (shards sharing one file take turns in it), and
// the merged file drops them.
const (
	SweepKey            = "sweep"
	ShardsKey           = "shards"
	sweepLevelsKey      = "sweep-levels"
	sweepWorkersKey     = "sweep-workers"
	sweepTransformsKey  = "sweep-transforms"
	sweepPlacementsKey  = "sweep-placements"
	sweepPinnedKey      = "sweep-pinned"
	sweepCountKey       = "sweep-count"
	ladderSweepKindName = "ladder"
)

var ladderShardKeys = []string{SweepKey, sweepLevelsKey, sweepWorkersKey, sweepTransformsKey, sweepPlacementsKey, sweepPinnedKey, sweepCountKey, ShardsKey}

// ShardSettings is the configuration a run of one of shards shards of
// the sweep records beside Settings: what LadderPlan reads back.
func (l Ladder) ShardSettings(shards int) []resultfile.Config {
	return []resultfile.Config{
		{Key: SweepKey, Value: ladderSweepKindName},
		{Key: sweepLevelsKey, Value: joined(l.Levels, level.Level.String)},
		{Key: sweepWorkersKey, Value: joinInts(l.Workers)},
		{Key: sweepTransformsKey, Value: strings.Join(l.Transforms, ",")},
		{Key: sweepPlacementsKey, Value: joined(l.Placements, loader.Placement.String)},
		{Key: sweepPinnedKey, Value: joined(l.Pinned, strconv.FormatBool)},
		{Key: sweepCountKey, Value: strconv.Itoa(l.Count)},
		{Key: ShardsKey, Value: strconv.Itoa(shards)},
	}
}

// SweepPlan is the merge.Planner of every sharded sweep: it reads the
// kind from the sweep key and enumerates the points as that sweep does.
func SweepPlan(config map[string]string) (merge.Plan, error) {
	switch kind := config[SweepKey]; kind {
	case ladderSweepKindName:
		return LadderPlan(config)
	case NodeSweepKind:
		return NodePlan(config)
	case "":
		return merge.Plan{}, fmt.Errorf("no %q configuration line: not written by a sharded sweep (run it with --shard i/n)", SweepKey)
	default:
		return merge.Plan{}, fmt.Errorf("sweep %q: merge knows ladder and node", kind)
	}
}

// LadderPlan reads a sharded ladder's ShardSettings back and lists its
// points and their shards exactly as the sweep selected them
// (Ladder.Points, Ladder.Selected).
func LadderPlan(config map[string]string) (merge.Plan, error) {
	var l Ladder
	levels, count, shards, err := sweepRuns(config)
	if err != nil {
		return merge.Plan{}, err
	}
	l.Levels, l.Count = levels, count
	if l.Workers, err = splitEach(config, sweepWorkersKey, positive); err != nil {
		return merge.Plan{}, err
	}
	if l.Transforms, err = splitEach(config, sweepTransformsKey, func(s string) (string, error) { return s, nil }); err != nil {
		return merge.Plan{}, err
	}
	if l.Placements, err = splitEach(config, sweepPlacementsKey, loader.ParsePlacement); err != nil {
		return merge.Plan{}, err
	}
	if l.Pinned, err = splitEach(config, sweepPinnedKey, strconv.ParseBool); err != nil {
		return merge.Plan{}, err
	}
	p := merge.Plan{Shards: shards, Count: l.Count, Keys: ladderShardKeys}
	shardOf := map[string]int{}
	for s := range shards {
		sh := l
		sh.Shard, sh.Shards = s, shards
		for _, pt := range sh.Selected() {
			shardOf[pt.Name()] = s
		}
	}
	for _, pt := range l.Points() {
		p.Points = append(p.Points, pt.Name())
		p.Shard = append(p.Shard, shardOf[pt.Name()])
	}
	return p, nil
}

// joined is each of vs formatted, joined by commas: what splitEach reads.
func joined[T any](vs []T, format func(T) string) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = format(v)
	}
	return strings.Join(s, ",")
}

// joinInts is "1,2,4".
func joinInts(v []int) string { return joined(v, strconv.Itoa) }

// splitEach parses the comma-separated list under key with parse.
func splitEach[T any](config map[string]string, key string, parse func(string) (T, error)) ([]T, error) {
	v, ok := config[key]
	if !ok {
		return nil, fmt.Errorf("no %q configuration line", key)
	}
	var out []T
	for _, f := range strings.Split(v, ",") {
		t, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", key, v, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// sweepRuns reads what every sharded sweep records beside its points'
// other dimensions: its levels, its runs per point and its number of
// shards.
func sweepRuns(config map[string]string) (levels []level.Level, count, shards int, err error) {
	v, ok := config[sweepLevelsKey]
	if !ok {
		return nil, 0, 0, fmt.Errorf("no %q configuration line", sweepLevelsKey)
	}
	if levels, err = level.ParseList(v); err != nil {
		return nil, 0, 0, fmt.Errorf("%s %q: %w", sweepLevelsKey, v, err)
	}
	if count, err = configCount(config, sweepCountKey, "a positive count"); err != nil {
		return nil, 0, 0, err
	}
	shards, err = configCount(config, ShardsKey, "a positive number of shards")
	return levels, count, shards, err
}

// configCount is the positive count of the configuration line key, want
// saying what it is where it is not.
func configCount(config map[string]string, key, want string) (int, error) {
	v, ok := config[key]
	if !ok {
		return 0, fmt.Errorf("no %q configuration line", key)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q: want %s", key, v, want)
	}
	return n, nil
}

// positive parses a positive count of a sweep's list: its workers, a
// node sweep's accelerators.
func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && n <= 0 {
		err = fmt.Errorf("%d must be positive", n)
	}
	return n, err
}
