package realpeer

import (
	"fmt"
	"slices"
	"strings"
)

// Ours is the name our loader's runs carry (peer=ours).
const Ours = "ours"

// Peer is one loader a user could install instead of ours: its script in
// peers/real and the pinned packages it needs.
type Peer struct {
	Name string
	// Script is the script, relative to ScriptDir; Args come before the
	// common arguments.
	Script string
	Args   []string
	// Packages are the distributions of peers/requirements.txt it
	// imports (the env's status file says whether each is usable).
	Packages []string
	// Uses is what --workers counts for it.
	Uses string
	// Bucket says it reads the images from a bucket (Settings.Data an
	// s3:// prefix, the endpoint and credentials in Runner.Env), not
	// from the ImageFolder on disk.
	Bucket bool
	// Prepare says it reads its own format, which its script's
	// --prepare writes once, before the rounds, from the images at
	// Settings.Data (Sweep runs it; a failure is every run's reason).
	Prepare bool
}

// ScriptDir is where the peers' scripts are, relative to the repository.
const ScriptDir = "peers/real"

// Peers are the real peers, in the order of a report.
var Peers = []Peer{
	{Name: "torch2", Script: "peer_torch2.py", Packages: []string{"torch", "torchvision"}, Uses: "DataLoader worker processes"},
	{Name: "spdl", Script: "peer_spdl.py", Packages: []string{"spdl", "torch"}, Uses: "pipeline threads"},
	{Name: "nodes-threads", Script: "peer_nodes.py", Args: []string{"--method=thread"}, Packages: []string{"torchdata", "torch", "torchvision"}, Uses: "ParallelMapper threads"},
	{Name: "nodes-procs", Script: "peer_nodes.py", Args: []string{"--method=process"}, Packages: []string{"torchdata", "torch", "torchvision"}, Uses: "ParallelMapper processes"},
	{Name: "dali", Script: "peer_dali.py", Packages: []string{"nvidia-dali-cuda120"}, Uses: "pipeline threads (CPU)"},
	{Name: "tfdata", Script: "peer_tfdata.py", Packages: []string{"tensorflow-cpu"}, Uses: "private thread pool, AUTOTUNE within it"},
	{Name: "s3map", Script: "peer_s3torch.py", Args: []string{"--kind=map"}, Packages: []string{"s3torchconnector", "torch", "torchvision"}, Uses: "DataLoader worker processes, one GET at a time each", Bucket: true},
	{Name: "s3iter", Script: "peer_s3torch.py", Args: []string{"--kind=iterable"}, Packages: []string{"s3torchconnector", "torch", "torchvision"}, Uses: "DataLoader worker processes, each streaming its share of the objects", Bucket: true},
	{Name: "streaming", Script: "peer_streaming.py", Packages: []string{"mosaicml-streaming", "torch", "torchvision"}, Uses: "DataLoader worker processes over StreamingDataset (MDS shards)", Bucket: true, Prepare: true},
	{Name: "litdata", Script: "peer_litdata.py", Packages: []string{"litdata", "torch", "torchvision"}, Uses: "StreamingDataLoader worker processes over StreamingDataset (litdata chunks)", Bucket: true, Prepare: true},
}

// Names are the peers' names.
func Names() []string {
	names := make([]string, len(Peers))
	for i, p := range Peers {
		names[i] = p.Name
	}
	return names
}

// Lookup returns the peer called name.
func Lookup(name string) (Peer, bool) {
	i := slices.IndexFunc(Peers, func(p Peer) bool { return p.Name == name })
	if i < 0 {
		return Peer{}, false
	}
	return Peers[i], true
}

// ParseNames reads a comma-separated list of peers, in the order given,
// each once: "all" is every peer that reads files, "all-bucket" every one
// that reads a bucket. An unknown name is an error naming it and the known
// ones, and so is a list that mixes the two kinds (a run is on files or on
// a bucket).
func ParseNames(list string) ([]Peer, error) {
	switch strings.TrimSpace(list) {
	case "all", "all-bucket":
		bucket := strings.TrimSpace(list) == "all-bucket"
		var out []Peer
		for _, p := range Peers {
			if p.Bucket == bucket {
				out = append(out, p)
			}
		}
		return out, nil
	}
	var out []Peer
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		p, ok := Lookup(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("an empty peer name in %q (want all, all-bucket, or some of %s)", list, strings.Join(Names(), ", "))
		case !ok:
			return nil, fmt.Errorf("no peer %q (want all, all-bucket, or some of %s)", name, strings.Join(Names(), ", "))
		case len(out) > 0 && out[0].Bucket != p.Bucket:
			return nil, fmt.Errorf("peers %s and %s: one reads files, the other a bucket; run them apart", out[0].Name, name)
		case slices.ContainsFunc(out, func(q Peer) bool { return q.Name == name }):
			return nil, fmt.Errorf("peer %q named twice", name)
		}
		out = append(out, p)
	}
	return out, nil
}
