package ondisk

import (
	"errors"
	"fmt"
)

// errNotJPEG is JPEGSize's answer for bytes that do not start a JPEG.
var errNotJPEG = errors.New("not a JPEG (no start-of-image marker)")

// JPEGSize reads a JPEG's width and height from its frame header (the
// first SOFn marker segment), without decoding anything: what --decoder
// nvjpeg checks on the host before the device decodes the file, so that a
// file of another size is refused naming the file rather than failing a
// whole batch on the GPU. It reads markers as image/jpeg does (fill bytes
// and stray bytes between segments are passed over) and allocates
// nothing. A frame whose height is left to a DNL marker (height 0) is an
// error: nvJPEG does not decode it.
func JPEGSize(data []byte) (w, h int, err error) {
	if len(data) < 2 || data[0] != 0xff || data[1] != 0xd8 {
		return 0, 0, errNotJPEG
	}
	i := 2
	for {
		// Stray bytes, then fill bytes, then the marker.
		for i < len(data) && data[i] != 0xff {
			i++
		}
		for i < len(data) && data[i] == 0xff {
			i++
		}
		if i >= len(data) {
			return 0, 0, errors.New("JPEG ends before its frame header")
		}
		m := data[i]
		i++
		switch {
		case m == 0x00 || m == 0x01 || m == 0xd8 || (m >= 0xd0 && m <= 0xd7):
			continue // stuffed zero, TEM, SOI, RSTn: no segment follows
		case m == 0xd9 || m == 0xda:
			return 0, 0, errors.New("JPEG has no frame header before its scan")
		}
		if i+2 > len(data) {
			return 0, 0, errors.New("JPEG ends in a marker segment's length")
		}
		n := int(data[i])<<8 | int(data[i+1])
		if n < 2 || i+n > len(data) {
			return 0, 0, fmt.Errorf("JPEG marker 0x%02x: a segment of %d bytes, %d left", m, n, len(data)-i)
		}
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc { // SOFn, not DHT, JPG, DAC
			if n < 7 {
				return 0, 0, fmt.Errorf("JPEG frame header of %d bytes", n)
			}
			h = int(data[i+3])<<8 | int(data[i+4])
			w = int(data[i+5])<<8 | int(data[i+6])
			if w == 0 || h == 0 {
				return 0, 0, fmt.Errorf("JPEG frame header says %dx%d", w, h)
			}
			return w, h, nil
		}
		i += n
	}
}

// CheckJPEG checks sample i's encoded bytes for a decoder that takes the
// file as it is (--decoder nvjpeg, on the device): a JPEG of the dataset's
// raw size, from its header alone. It returns the sample's label. A file
// that is no JPEG or of another size is a corrupt sample (skipped within
// MaxFailures), its error naming the file.
func (d *Dataset) CheckJPEG(i int, data []byte) (label int, err error) {
	if i < 0 || i >= d.m.Count {
		return 0, fmt.Errorf("ondisk: check sample %d: out of range [0, %d)", i, d.m.Count)
	}
	w, h, err := JPEGSize(data)
	if err != nil {
		return 0, corruptf("ondisk: sample %d: %s: %w", i, d.where(i), err)
	}
	if w != d.m.Width || h != d.m.Height {
		return 0, corruptf("ondisk: sample %d: %s: JPEG is %dx%d; decoded on the device it must be the dataset's %dx%d (the device decodes a file at its stored size)",
			i, d.where(i), w, h, d.m.Width, d.m.Height)
	}
	return d.m.Labels[i], nil
}
