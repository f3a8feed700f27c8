package ondisk

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Member is a regular file inside a tar shard: its name and where its data
// lies in the shard.
type Member struct {
	Name         string
	Offset, Size int64
}

// IndexShard reads the headers of the tar archive r and returns its regular
// members in order with their data offsets. It seeks over the data when r
// is an io.Seeker. On a corrupt or truncated archive it returns the members
// indexed so far and an error; every returned member's data lies within
// what the reader provided up to the next header.
//
// An archive ends with two zero blocks. archive/tar reports a clean io.EOF
// also for a stream that stops exactly at a header boundary (a shard cut by
// a copy or a download, `head -c 12288`) or after one zero block, which
// would silently drop every member after the cut; IndexShard refuses such
// an archive (ErrNoEndMarker) after the members it read.
func IndexShard(r io.Reader) ([]Member, error) {
	cr := &countReader{r: r}
	var src io.Reader = cr
	size := int64(-1) // unknown: the data is read to check it is there
	if s, ok := r.(io.ReadSeeker); ok {
		start, err := s.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, err
		}
		end, err := s.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, err
		}
		if _, err := s.Seek(start, io.SeekStart); err != nil {
			return nil, err
		}
		size = end - start
		src = &seekCountReader{cr, s, start}
	}
	tr := tar.NewReader(src)
	var out []Member
	entries := 0
	next := int64(0) // where the next header starts; -1 after a sparse entry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// Next has read the two zero blocks (1024 bytes past next),
			// or fewer: a cut at a boundary, or one zero block.
			if next >= 0 && cr.n < next+2*blockSize {
				return out, fmt.Errorf("%w after %d members: the archive stops at byte %d", ErrNoEndMarker, len(out), cr.n)
			}
			return out, nil
		}
		if err != nil {
			if entries == 0 {
				return out, fmt.Errorf("not a tar archive: its first header: %w", err)
			}
			return out, fmt.Errorf("tar header after %d members: %w", len(out), err)
		}
		entries++
		next = dataEnd(hdr, cr.n)
		if hdr.Typeflag != tar.TypeReg || hdr.Size < 0 {
			continue
		}
		m := Member{Name: hdr.Name, Offset: cr.n, Size: hdr.Size}
		// Make sure the data is there before listing the member: a
		// truncated member is an error here, not a short read later.
		if size >= 0 {
			if m.Offset+m.Size > size {
				return out, fmt.Errorf("tar member %s: truncated: %d of %d bytes", hdr.Name, max(size-m.Offset, 0), m.Size)
			}
		} else if n, err := io.Copy(io.Discard, tr); err != nil || n != m.Size {
			return out, fmt.Errorf("tar member %s: truncated: %d of %d bytes", hdr.Name, n, m.Size)
		}
		out = append(out, m)
	}
}

// ErrNoEndMarker is wrapped by IndexShard's error for an archive that
// ends without its two zero blocks: it was cut, and members may be lost.
var ErrNoEndMarker = errors.New("tar: truncated: no end-of-archive marker (two zero blocks)")

// blockSize is the tar block: headers and padded data come in blocks.
const blockSize = 512

// dataEnd is where the entry hdr, whose data starts at start, ends with
// its padding: where the next header starts. It is -1 for a sparse entry,
// whose data on disk archive/tar does not report.
func dataEnd(hdr *tar.Header, start int64) int64 {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return -1
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return -1
		}
	}
	n := hdr.Size
	switch hdr.Typeflag {
	case tar.TypeLink, tar.TypeSymlink, tar.TypeChar, tar.TypeBlock, tar.TypeDir, tar.TypeFifo:
		n = 0 // header-only: archive/tar reads no data whatever Size says
	}
	return start + (n+blockSize-1)/blockSize*blockSize
}

// countReader counts the bytes consumed from r.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// seekCountReader lets archive/tar seek over member data instead of
// reading it, keeping the count.
type seekCountReader struct {
	*countReader
	s     io.Seeker
	start int64
}

func (c *seekCountReader) Seek(off int64, whence int) (int64, error) {
	pos, err := c.s.Seek(off, whence)
	if err == nil {
		c.n = pos - c.start
	}
	return pos, err
}
