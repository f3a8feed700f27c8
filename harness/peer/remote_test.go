package peer_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/peer"
)

const remoteScript = "../../peers/torch/s3.py"

// TestParseRemote: the boto3 peer's lines, good and bad.
func TestParseRemote(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"good", "boto3: 1.26\nBenchmarkPeerRemote/layout=shards/impl=torch/workers=4 8 1e9 ttfb-ns 80.5 samples/s 2.5 cpu-s\n", ""},
		{"layout", "BenchmarkPeerRemote/layout=zip/impl=torch/workers=4 8 1e9 ttfb-ns 80.5 samples/s\n", `unknown layout "zip"`},
		{"no layout", "BenchmarkPeerRemote/impl=torch/workers=4 8 1e9 ttfb-ns 80.5 samples/s\n", "BenchmarkPeerRemote/impl=torch/workers=4: a record of PeerRemote without its key layout"},
		{"impl", "BenchmarkPeerRemote/layout=shards/impl=jax/workers=4 8 1e9 ttfb-ns 80.5 samples/s\n", `unknown impl "jax"`},
		{"one batch", "BenchmarkPeerRemote/layout=shards/impl=torch/workers=4 1 1e9 ttfb-ns 80.5 samples/s\n", "1 batches"},
		{"negative", "BenchmarkPeerRemote/layout=imagefolder/impl=torch/workers=1 6 1e9 ttfb-ns -1 samples/s\n", "must be finite"},
		{"none", "boto3: 1.26\n", "no BenchmarkPeerRemote lines"},
	} {
		o, err := peer.ParseRemote(strings.NewReader(tc.in), "s3.py")
		if tc.want == "" {
			if err != nil || len(o.Results) != 1 || o.Results[0].Layout != peer.Shards || o.Results[0].Workers != 4 ||
				o.Results[0].SamplesPerSec != 80.5 || o.Results[0].Batches != 8 || len(o.Config) != 1 {
				t.Errorf("%s: %+v, %v", tc.name, o, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestRemoteCeiling: the link's ceiling is its bandwidth over a sample's
// bytes or its request rate over a sample's requests, whichever is lower,
// and a row reaches it at 90%.
func TestRemoteCeiling(t *testing.T) {
	l := link.Config{Bandwidth: 1_000_000, RequestRate: 100}
	for _, tc := range []struct {
		cost peer.LayoutCost
		want float64
	}{
		{peer.LayoutCost{BytesPerSample: 1000, RequestsPerSample: 1}, 100},     // the request rate
		{peer.LayoutCost{BytesPerSample: 1000, RequestsPerSample: 0.125}, 800}, // 1000/s by bytes, 800/s by requests
		{peer.LayoutCost{BytesPerSample: 100_000, RequestsPerSample: 1}, 10},   // the bandwidth
	} {
		if got := tc.cost.Ceiling(l); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%+v: ceiling %v, want %v", tc.cost, got, tc.want)
		}
	}
	if c := (peer.LayoutCost{BytesPerSample: 10, RequestsPerSample: 1}).Ceiling(link.Config{}); !math.IsInf(c, 1) {
		t.Errorf("an unlimited link's ceiling %v, want +Inf", c)
	}
	ms := []peer.RemoteMeasurement{
		{Layout: peer.ImageFolder, Measurement: peer.Measurement{Impl: peer.Torch, Workers: 1, Batches: 6, SamplesPerSec: 30}},
		{Layout: peer.ImageFolder, Measurement: peer.Measurement{Impl: peer.Fast, Workers: 1, Batches: 6, SamplesPerSec: 95}},
		{Layout: peer.ImageFolder, Measurement: peer.Measurement{Impl: peer.Torch, Workers: 4, Batches: 6, SamplesPerSec: 91}},
		{Layout: peer.ImageFolder, Measurement: peer.Measurement{Impl: peer.Fast, Workers: 4, Batches: 6, SamplesPerSec: 99}},
	}
	rows := peer.SummarizeRemote(ms, map[string]peer.LayoutCost{peer.ImageFolder: {BytesPerSample: 1000, RequestsPerSample: 1}}, l)
	if n, ok := peer.Reached(rows, peer.ImageFolder, peer.Fast); !ok || n != 1 {
		t.Errorf("ours reaches the ceiling at %d (%v), want 1", n, ok)
	}
	if n, ok := peer.Reached(rows, peer.ImageFolder, peer.Torch); !ok || n != 4 {
		t.Errorf("the peer reaches the ceiling at %d (%v), want 4", n, ok)
	}
	if met, ok := rows[0].Met(); rows[0].Impl != peer.Fast || !ok || !met {
		t.Errorf("row 0 %+v: 95 over 30 meets the 3× target", rows[0])
	}
	if met, ok := rows[2].Met(); !ok || met {
		t.Errorf("row 2 %+v: 99 over 91 does not meet the 3× target", rows[2])
	}
}

// TestRemoteScriptUnreachable runs the boto3 peer against an endpoint
// nothing listens on: one line naming it, within the listing's two
// attempts. It needs Debian's python3-torch and python3-boto3.
func TestRemoteScriptUnreachable(t *testing.T) {
	p := peer.Peer{Python: "/usr/bin/python3", Script: remoteScript, Env: []string{
		"AWS_ENDPOINT_URL=http://127.0.0.1:1", "AWS_ENDPOINT_URL_S3=http://127.0.0.1:1",
		"AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s", "AWS_REGION=us-east-1"}}
	s := peer.Settings{Width: 32, Height: 32, Crop: 16, Batch: 4, Batches: 2, Seed: 1, Data: "s3://b/p"}
	_, err := p.RunRemote(context.Background(), s, peer.ImageFolder, 1)
	var re *peer.RunError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "cannot reach the endpoint http://127.0.0.1:1") ||
		!strings.Contains(err.Error(), "imagefolder, workers=1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("unreachable endpoint: %v; want one line naming the endpoint and the run", err)
	}
}
