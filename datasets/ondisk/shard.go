package ondisk

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
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
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("tar header after %d members: %w", len(out), err)
		}
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
