package ondisk

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestIndexShardNeedsEndMarker is issue 32, item 9: a tar archive cut at
// a header's start, at the end of a member's data, or before or between
// its two end blocks is refused after the members before the cut,
// seekable or streamed; archive/tar alone reads it as complete. The
// whole archive, with or without the writer's trailing record padding,
// reads clean.
func TestIndexShardNeedsEndMarker(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var headers []int64 // where each member's header starts
	for k := range 4 {
		if err := tw.Flush(); err != nil { // the last member's padding
			t.Fatal(err)
		}
		headers = append(headers, int64(buf.Len()))
		writeMember(tw, fmt.Sprintf("%06d.jpg", k), bytes.Repeat([]byte{byte(k + 1)}, 600+k))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	end := int64(len(whole)) - 1024 // where the two zero blocks start
	streams := func(b []byte) map[string]io.Reader {
		return map[string]io.Reader{"seeker": bytes.NewReader(b), "stream": bytes.NewBuffer(b)}
	}
	for _, b := range [][]byte{whole, append(whole, make([]byte, 10240-len(whole)%10240)...)} {
		for name, r := range streams(b) {
			if ms, err := IndexShard(r); err != nil || len(ms) != 4 {
				t.Errorf("whole archive (%d bytes, %s): %d members, %v", len(b), name, len(ms), err)
			}
		}
	}
	for _, tc := range []struct {
		cut  int64
		want int // members before the cut
	}{
		{headers[1], 1}, {headers[2], 2}, {headers[3], 3}, // at a header: head -c
		{headers[0] + 512 + 600, 1}, // after a member's data, before its padding
		{end, 4}, {end + 512, 4},    // before the end blocks; after one of them
		{0, 0}, // an empty file
	} {
		for name, r := range streams(whole[:tc.cut]) {
			ms, err := IndexShard(r)
			if !errors.Is(err, ErrNoEndMarker) || len(ms) != tc.want || !strings.Contains(err.Error(), fmt.Sprintf("stops at byte %d", tc.cut)) {
				t.Errorf("cut at %d (%s): %d members, error %v; want %d and ErrNoEndMarker naming the byte", tc.cut, name, len(ms), err, tc.want)
			}
		}
	}
	for _, junk := range []string{"hello\n", strings.Repeat("x", 2048)} {
		for name, r := range streams([]byte(junk)) {
			if ms, err := IndexShard(r); err == nil || len(ms) != 0 || !strings.Contains(err.Error(), "not a tar archive") {
				t.Errorf("%d bytes of text (%s): %d members, %v; want not a tar archive", len(junk), name, len(ms), err)
			}
		}
	}
}
