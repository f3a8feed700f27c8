package workloads

import (
	"fmt"
	"strings"
	"testing"

	"github.com/headspace-bench/headspace/harness/peer"
	"github.com/headspace-bench/headspace/harness/realpeer"
	"github.com/headspace-bench/headspace/harness/resultfile"
)

// TestLiveLinesDecodeAsFiles (issue 53): a script's live line and the
// same line in a results file decode through the one decoder of its
// record's name, the codec's: both give the same run, or both refuse it
// with the same error.
func TestLiveLinesDecodeAsFiles(t *testing.T) {
	peerLive := func(line string) (any, error) {
		o, err := peer.Parse(strings.NewReader(line), "out.txt")
		return o.Results, err
	}
	peerFile := func(line string) (any, error) {
		recs, _, err := resultfile.Parse(strings.NewReader(line), "out.txt")
		if err != nil {
			return nil, err
		}
		r, err := PeerCodec.Decode(recs)
		return r.Measurements, err
	}
	remoteLive := func(line string) (any, error) {
		o, err := peer.ParseRemote(strings.NewReader(line), "out.txt")
		return o.Results, err
	}
	remoteFile := func(line string) (any, error) {
		recs, _, err := resultfile.Parse(strings.NewReader(line), "out.txt")
		if err != nil {
			return nil, err
		}
		o, err := PeerRemoteCodec.Decode(recs)
		return o.Result.Measurements, err
	}
	realLive := func(line string) (any, error) {
		o, err := realpeer.ParseScript(strings.NewReader(line), "out.txt", false)
		if err != nil {
			return nil, err
		}
		return []realpeer.Measurement{o.Run}, nil
	}
	realFile := func(line string) (any, error) {
		recs, _, err := resultfile.Parse(strings.NewReader(line), "out.txt")
		if err != nil {
			return nil, err
		}
		o, err := RealPeerCodec.Decode(recs)
		return o.Runs, err
	}
	type decoder func(string) (any, error)
	peerSide := [2]decoder{peerLive, peerFile}
	remoteSide := [2]decoder{remoteLive, remoteFile}
	realSide := [2]decoder{realLive, realFile}
	for _, tc := range []struct {
		name    string
		decode  [2]decoder
		line    string
		refused bool
	}{
		{"peer", peerSide, "BenchmarkPeer/impl=torch/workers=2 8 2.5e+09 ttfb-ns 152.25 samples/s 30.5 cpu-s", false},
		{"peer without cpu-s", peerSide, "BenchmarkPeer/impl=fast/workers=1 3 250000000 ttfb-ns 1000 samples/s", false},
		{"peer unknown impl", peerSide, "BenchmarkPeer/impl=jax/workers=1 2 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"peer no impl", peerSide, "BenchmarkPeer/workers=1 2 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"peer zero workers", peerSide, "BenchmarkPeer/impl=torch/workers=0 2 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"peer part more", peerSide, "BenchmarkPeer/impl=torch/workers=1/x=2 2 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"peer key twice", peerSide, "BenchmarkPeer/impl=torch/impl=fast/workers=1 2 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"peer gomaxprocs", peerSide, "BenchmarkPeer/impl=torch/workers=1-2 2 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"peer one batch", peerSide, "BenchmarkPeer/impl=torch/workers=1 1 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"peer negative", peerSide, "BenchmarkPeer/impl=torch/workers=1 2 1 ttfb-ns -3 samples/s 1 cpu-s", true},
		{"peer no ttfb", peerSide, "BenchmarkPeer/impl=torch/workers=1 2 1 samples/s 1 cpu-s", true},
		{"another's", peerSide, "BenchmarkLoaders/mode=process/workers=1 2 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"remote", remoteSide, "BenchmarkPeerRemote/layout=shards/impl=torch/workers=4 8 1e9 ttfb-ns 80.5 samples/s 2.5 cpu-s", false},
		{"remote layout", remoteSide, "BenchmarkPeerRemote/layout=zip/impl=torch/workers=4 8 1e9 ttfb-ns 80.5 samples/s 2.5 cpu-s", true},
		{"remote impl", remoteSide, "BenchmarkPeerRemote/layout=shards/impl=jax/workers=4 8 1e9 ttfb-ns 80.5 samples/s 2.5 cpu-s", true},
		{"remote no layout", remoteSide, "BenchmarkPeerRemote/impl=torch/workers=4 8 1e9 ttfb-ns 80.5 samples/s 2.5 cpu-s", true},
		{"real", realSide, "BenchmarkRealPeer/peer=spdl/workers=2 8 412345678 ttfb-ns 310.5 samples/s 3.125 cpu-s", false},
		{"real with rss", realSide, "BenchmarkRealPeer/peer=ours/workers=1 2 5 ttfb-ns 1 samples/s 0 cpu-s 1048576 peak-rss-B", false},
		{"real unknown peer", realSide, "BenchmarkRealPeer/peer=ray/workers=2 8 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"real zero workers", realSide, "BenchmarkRealPeer/peer=spdl/workers=0 8 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"real part more", realSide, "BenchmarkRealPeer/peer=spdl/workers=2/x=1 8 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"real no workers", realSide, "BenchmarkRealPeer/peer=spdl 8 1 ttfb-ns 1 samples/s 1 cpu-s", true},
		{"real no cpu", realSide, "BenchmarkRealPeer/peer=spdl/workers=2 8 1 ttfb-ns 1 samples/s", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, lerr := tc.decode[0](tc.line + "\n")
			file, ferr := tc.decode[1](tc.line + "\n")
			if (lerr != nil) != tc.refused || (ferr != nil) != tc.refused {
				t.Fatalf("live: %v; file: %v; want refused %v", lerr, ferr, tc.refused)
			}
			if tc.refused {
				if lerr.Error() != ferr.Error() {
					t.Errorf("refused differently:\nlive: %v\nfile: %v", lerr, ferr)
				}
				return
			}
			if l, f := fmt.Sprintf("%+v", live), fmt.Sprintf("%+v", file); l != f {
				t.Errorf("decoded differently:\nlive: %s\nfile: %s", l, f)
			}
		})
	}
}
