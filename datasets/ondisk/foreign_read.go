package ondisk

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/turbojpeg"
)

// openIndexed opens the dataset the user brought in dir by its index x:
// WebDataset shards are opened, an ImageFolder's files at each fetch.
func openIndexed(dir string, x *Index, opts Options, turbo *turbojpeg.Library) (*Dataset, error) {
	d, err := foreignDataset(x, opts, turbo)
	if err != nil {
		return nil, err
	}
	if x.Kind == KindWebDataset {
		d.shards = make([]*os.File, len(x.Files))
		d.shardErr = make([]error, len(x.Files))
		for i, rel := range x.Files {
			f, _, err := openUserFile(filepath.Join(dir, filepath.FromSlash(rel)), MaxUserFileBytes)
			if err != nil {
				d.shardErr[i] = err
				continue
			}
			d.shards[i] = f
		}
	}
	return d, nil
}

// foreignDataset is the Dataset of a user's dataset's index, local or in
// a bucket, before any file is opened, with its manifest synthesized:
// count, shape (Options or the most common size), classes, labels, the
// formats met and the layout; it lists no files.
func foreignDataset(x *Index, opts Options, turbo *turbojpeg.Library) (*Dataset, error) {
	dir := x.Dir
	w, h := opts.Width, opts.Height
	if w == 0 && h == 0 {
		if sz := x.Sizes(); len(sz) > 0 {
			w, h = sz[0].Width, sz[0].Height
		}
	}
	if w <= 0 || h <= 0 || w > MaxSide || h > MaxSide {
		return nil, fmt.Errorf("ondisk: %s: no readable image to take the shape from, or shape %dx%d out of 1..%d", dir, w, h, MaxSide)
	}
	m := &Manifest{
		Version: FormatVersion, Count: len(x.Samples), Width: w, Height: h,
		Classes: max(1, len(x.Classes)), Format: x.Formats(), Layout: "files",
		Labels: make([]int, len(x.Samples)),
	}
	if x.Kind == KindWebDataset {
		m.Layout = "shards"
	}
	for i, s := range x.Samples {
		m.Labels[i] = s.Label
	}
	return newDataset(dir, m, x, opts, turbo)
}

// fetchForeign reads sample i's encoded image: the file (through
// openUserFile: regular, bounded) or the shard member by offset. Every
// error is ErrCorrupt: the data the user pointed at cannot be read as it
// is (exit 2), naming the file or member.
func (d *Dataset) fetchForeign(i int, buf []byte) ([]byte, error) {
	s := d.foreign.Samples[i]
	if s.Error != "" {
		return buf, corruptf("ondisk: fetch sample %d: %s: %s", i, d.where(i), s.Error)
	}
	if d.foreign.Kind == KindWebDataset {
		f := d.shards[s.File]
		if f == nil {
			return buf, corruptf("ondisk: fetch sample %d: %s: shard unreadable: %v", i, d.where(i), d.shardErr[s.File])
		}
		return d.readMember(f, i, s.Offset, s.Size, buf)
	}
	f, size, err := openUserFile(d.where(i), MaxUserImageBytes)
	if err != nil {
		return buf, corruptf("ondisk: fetch sample %d: %w", i, err)
	}
	defer f.Close()
	buf = grow(buf, size)
	n, err := io.ReadFull(f, buf)
	if err != nil {
		return buf[:n], corruptf("ondisk: fetch sample %d: %s: %d of %d bytes: %w", i, d.where(i), n, size, err)
	}
	return buf, nil
}

// decodeForeign decodes sample i's JPEG or PNG (told by its first bytes,
// not its name), checking the header against MaxPixels first, and
// resizes it to the dataset's shape (with Options.DecodeMinSide, the
// scaled shape, DecodedShape: dst's size) when its size differs. An image of
// the shape decodes straight into dst (with TurboJPEG, allocation-free);
// another goes through a pooled buffer at its own size.
func (d *Dataset) decodeForeign(i int, data []byte, dst *datasets.Sample) error {
	isJPEG := len(data) >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff
	if isJPEG && d.turbo != nil {
		return d.decodeForeignTurbo(i, data, dst)
	}
	return d.decodeForeignStd(i, data, dst)
}

// decodeFail is sample i's decode error, naming where it is.
func (d *Dataset) decodeFail(i int, err error) error {
	return corruptf("ondisk: decode sample %d: %s: %w", i, d.where(i), err)
}

// decodeForeignTurbo decodes JPEG sample i with libjpeg-turbo into dst, at the
// smallest scale that covers dst's size, resized if it is not that size.
func (d *Dataset) decodeForeignTurbo(i int, data []byte, dst *datasets.Sample) error {
	w, h := dst.Image.Width, dst.Image.Height
	dec, err := d.tjFree.get(d.turbo)
	if err != nil { // the library's, not the data's
		return fmt.Errorf("ondisk: decode sample %d: %w", i, err)
	}
	defer d.tjFree.put(dec)
	iw, ih, err := dec.Header(data)
	if err != nil {
		return d.decodeFail(i, err)
	}
	if int64(iw)*int64(ih) > MaxPixels {
		return d.decodeFail(i, fmt.Errorf("jpeg of %dx%d: more than %d pixels", iw, ih, MaxPixels))
	}
	// With a scaled decode (Options.DecodeMinSide, w×h the scaled
	// raw size), each image is decoded at the smallest factor that
	// still covers w×h (turbojpeg.Fit), then resized, as PIL's
	// draft() then resize() do.
	f := turbojpeg.Full
	if d.scaledW > 0 {
		if g, ok := d.turbo.Fit(iw, ih, w, h); ok {
			f = g
		}
	}
	fw, fh := f.Scaled(iw), f.Scaled(ih)
	if fw == w && fh == h {
		if _, _, err := dec.DecodeRGBScaled(data, dst.Image.Pix, iw, ih, f); err != nil {
			return d.decodeFail(i, err)
		}
		return nil
	}
	sp := d.scratchBuf(3 * fw * fh)
	defer d.scratch.Put(sp)
	if _, _, err := dec.DecodeRGBScaled(data, *sp, iw, ih, f); err != nil {
		return d.decodeFail(i, err)
	}
	resizeRGB(dst.Image.Pix, w, h, *sp, fw, fh)
	return nil
}

// decodeForeignStd decodes PNG or JPEG sample i with the standard library into
// dst, resized if it is not dst's size.
func (d *Dataset) decodeForeignStd(i int, data []byte, dst *datasets.Sample) error {
	w, h := dst.Image.Width, dst.Image.Height
	r := d.readers.Get().(*bytes.Reader)
	defer func() { r.Reset(nil); d.readers.Put(r) }()
	r.Reset(data)
	format, iw, ih, err := checkUserImage(r)
	if err != nil {
		return d.decodeFail(i, err)
	}
	r.Reset(data)
	var img image.Image
	if format == "png" {
		img, err = png.Decode(r)
	} else {
		img, err = jpeg.Decode(r)
	}
	if err != nil {
		return d.decodeFail(i, fmt.Errorf("%s: %w", format, err))
	}
	if b := img.Bounds(); b.Dx() != iw || b.Dy() != ih {
		return d.decodeFail(i, fmt.Errorf("%s: header says %dx%d, image is %dx%d", format, iw, ih, b.Dx(), b.Dy()))
	}
	if iw == w && ih == h {
		if err := ToRGB(dst.Image.Pix, img); err != nil {
			return d.decodeFail(i, err)
		}
		return nil
	}
	sp := d.scratchBuf(3 * iw * ih)
	defer d.scratch.Put(sp)
	if err := ToRGB(*sp, img); err != nil {
		return d.decodeFail(i, err)
	}
	resizeRGB(dst.Image.Pix, w, h, *sp, iw, ih)
	return nil
}

// scratchBuf is a pooled buffer of n bytes.
func (d *Dataset) scratchBuf(n int) *[]byte {
	sp, _ := d.scratch.Get().(*[]byte)
	if sp == nil {
		sp = new([]byte)
	}
	if cap(*sp) < n {
		*sp = make([]byte, n)
	}
	*sp = (*sp)[:n]
	return sp
}

// resizeRGB resizes the interleaved RGB image src (sw×sh) to dst (dw×dh)
// by bilinear interpolation with pixel centres aligned, as PIL's and
// torchvision's bilinear resize without antialiasing do; the aspect ratio
// is not kept. Fixed point (16 fractional bits), no allocation.
func resizeRGB(dst []byte, dw, dh int, src []byte, sw, sh int) {
	// Source coordinate of destination pixel x: (x+0.5)·sw/dw − 0.5,
	// clamped to [0, sw−1].
	coord := func(x, dn, sn int) (i0, i1 int, f int64) {
		p := ((2*int64(x)+1)*int64(sn)<<16)/(2*int64(dn)) - 1<<15
		p = max(0, min(p, int64(sn-1)<<16))
		i0 = int(p >> 16)
		return i0, min(i0+1, sn-1), p & 0xffff
	}
	for y := range dh {
		y0, y1, fy := coord(y, dh, sh)
		r0 := src[y0*sw*3 : (y0+1)*sw*3]
		r1 := src[y1*sw*3 : (y1+1)*sw*3]
		out := dst[y*dw*3 : (y+1)*dw*3]
		for x := range dw {
			x0, x1, fx := coord(x, dw, sw)
			for c := range 3 {
				a := int64(r0[3*x0+c])<<16 + (int64(r0[3*x1+c])-int64(r0[3*x0+c]))*fx
				b := int64(r1[3*x0+c])<<16 + (int64(r1[3*x1+c])-int64(r1[3*x0+c]))*fx
				v := a + (b-a)*fy>>16
				out[3*x+c] = uint8((v + 1<<15) >> 16)
			}
		}
	}
}
