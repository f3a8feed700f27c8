package realpeer

import (
	"slices"
	"strings"
	"testing"
)

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
		err  string
	}{
		{"all", []string{"torch2", "spdl", "nodes-threads", "nodes-procs", "dali", "tfdata"}, ""},
		{"all-bucket", []string{"s3map", "s3iter", "streaming", "litdata"}, ""},
		{"s3iter,s3map", []string{"s3iter", "s3map"}, ""},
		{"spdl,s3map", nil, "peers spdl and s3map: one reads files, the other a bucket; run them apart"},
		{" all ", []string{"torch2", "spdl", "nodes-threads", "nodes-procs", "dali", "tfdata"}, ""},
		{"spdl", []string{"spdl"}, ""},
		{"tfdata, torch2", []string{"tfdata", "torch2"}, ""},
		{"nodes-procs,dali", []string{"nodes-procs", "dali"}, ""},
		{"pytorch", nil, `no peer "pytorch" (want all, all-bucket, or some of torch2, spdl, nodes-threads, nodes-procs, dali, tfdata, s3map, s3iter, streaming, litdata)`},
		{"spdl,", nil, "an empty peer name"},
		{"", nil, "an empty peer name"},
		{"spdl,spdl", nil, `peer "spdl" named twice`},
		{"all,spdl", nil, `no peer "all"`},
	} {
		got, err := ParseNames(tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseNames(%q): error %v, want %q", tc.list, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseNames(%q): %v", tc.list, err)
			continue
		}
		if names := names(got); !slices.Equal(names, tc.want) {
			t.Errorf("ParseNames(%q) = %v, want %v", tc.list, names, tc.want)
		}
	}
}

// TestPeersHaveScripts: every peer's script is in ScriptDir and every
// package it needs is pinned in peers/requirements.txt.
func TestPeersHaveScripts(t *testing.T) {
	req := readRepoFile(t, "peers/requirements.txt")
	for _, p := range Peers {
		readRepoFile(t, ScriptDir+"/"+p.Script)
		for _, pkg := range p.Packages {
			if !strings.Contains(req, "\n"+pkg+"==") {
				t.Errorf("peer %s needs %s, which peers/requirements.txt does not pin", p.Name, pkg)
			}
		}
	}
}
