package atomicfile

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The output policy. Every file headspace writes has a Kind: what it is
// for (a figure, an animation, a CPU profile, a report, a JSON document
// of one schema). Headspace stamps each file it writes with its kind, in
// a way its format allows and its readers ignore: a Markdown comment at
// the end of a report, a tEXt chunk in a PNG, a comment in an SVG, a
// comment extension in a GIF, the gzip header's comment in a profile, a
// leading "format" member in JSON. An existing file is replaced only if
// it carries the same kind's stamp (or is empty): anything else — a
// source file, someone's photo, a report of another command — is refused
// with ErrRefused, and CheckKind says so before anything is measured.
// Results files are the one kind recognised by parsing rather than by a
// stamp (package resultfile; ErrRefused is shared).
//
// Targets that are not regular files (devices, named pipes, and anything
// reached through /dev or /proc such as /dev/stdout) are written in
// place, never renamed over; they are opened without blocking (see
// OpenInPlace), so a pipe nobody reads cannot hang a run past SIGINT.

// ErrRefused marks an error that refuses a destination before anything is
// written: a file headspace did not write for this purpose, a complete
// file a partial run would replace, and so on. Commands exit 2 on it.
var ErrRefused = errors.New("refused")

// Refusef returns an ErrRefused error with the formatted message.
func Refusef(format string, args ...any) error {
	return refusal{fmt.Sprintf(format, args...)}
}

type refusal struct{ msg string }

func (r refusal) Error() string      { return r.msg }
func (refusal) Is(target error) bool { return target == ErrRefused }

// A Kind is what an output file is for: its name in messages, how
// headspace stamps the bytes it writes and how it recognises its stamp.
type Kind struct {
	// Name says what the file is, in messages ("CPU profile").
	Name      string
	stamp     func([]byte) ([]byte, error)
	recognize func(head, tail []byte) bool
}

// Stamp returns b with k's stamp.
func (k Kind) Stamp(b []byte) ([]byte, error) {
	if k.stamp == nil {
		return b, nil
	}
	return k.stamp(b)
}

// sampleSize is how much of an existing file's head and tail is read to
// recognise its kind: every stamp lies within it.
const sampleSize = 64 << 10

const stampWord = "headspace"

// Report is a Markdown report of the given purpose ("what-if report",
// "peer report", "reproduce 003 report"): it ends in the comment
// "<!-- written by headspace: <purpose> -->".
func Report(purpose string) Kind {
	mark := "<!-- written by " + stampWord + ": " + purpose + " -->"
	return Kind{
		Name: purpose,
		stamp: func(b []byte) ([]byte, error) {
			if bytes.Contains(b, []byte(mark)) {
				return b, nil
			}
			if len(b) > 0 && b[len(b)-1] != '\n' {
				b = append(b, '\n')
			}
			return append(b, "\n"+mark+"\n"...), nil
		},
		recognize: func(_, tail []byte) bool { return bytes.Contains(tail, []byte(mark)) },
	}
}

// Figure is a plot, a PNG or an SVG as its bytes say: the PNG carries a
// tEXt chunk "Software: headspace figure", the SVG the comment
// "<!-- headspace figure -->" after its XML declaration.
var Figure = Kind{Name: "figure", stamp: stampFigure, recognize: func(head, _ []byte) bool {
	return bytes.HasPrefix(head, pngSig) && bytes.Contains(head[:min(len(head), 256)], pngText) ||
		bytes.Contains(head[:min(len(head), 1024)], []byte(svgMark))
}}

var (
	pngSig  = []byte("\x89PNG\r\n\x1a\n")
	pngText = []byte("tEXtSoftware\x00" + stampWord + " figure")
	svgMark = "<!-- " + stampWord + " figure -->"
)

func stampFigure(b []byte) ([]byte, error) {
	if bytes.HasPrefix(b, pngSig) {
		// The tEXt chunk goes right after IHDR (8 + 25 bytes).
		const at = 8 + 4 + 4 + 13 + 4
		if len(b) < at || string(b[12:16]) != "IHDR" {
			return nil, errors.New("malformed PNG: no IHDR chunk first")
		}
		data := pngText[4:]
		chunk := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		chunk = append(chunk, pngText...)
		chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(pngText))
		return append(append(append([]byte{}, b[:at]...), chunk...), b[at:]...), nil
	}
	i := bytes.Index(b, []byte("<svg"))
	if i < 0 {
		return nil, errors.New("a figure must be a PNG or an SVG")
	}
	return append(append(append([]byte{}, b[:i]...), svgMark+"\n"...), b[i:]...), nil
}

// Animation is a GIF with the comment extension "headspace animation"
// after its screen descriptor and global colour table.
var Animation = Kind{Name: "GIF animation", stamp: func(b []byte) ([]byte, error) {
	at, ok := gifBody(b)
	if !ok {
		return nil, errors.New("malformed GIF")
	}
	return append(append(append([]byte{}, b[:at]...), gifComment...), b[at:]...), nil
}, recognize: func(head, _ []byte) bool {
	at, ok := gifBody(head)
	return ok && bytes.HasPrefix(head[at:], gifComment)
}}

var gifComment = []byte("\x21\xfe\x13" + stampWord + " animation\x00")

// gifBody is the offset of the first block after a GIF's logical screen
// descriptor and global colour table.
func gifBody(b []byte) (int, bool) {
	if len(b) < 13 || !bytes.HasPrefix(b, []byte("GIF8")) {
		return 0, false
	}
	at := 13
	if flags := b[10]; flags&0x80 != 0 {
		at += 3 << ((flags & 7) + 1)
	}
	return at, at <= len(b)
}

// Profile is a CPU profile (pprof's gzipped protocol buffer) whose gzip
// header's comment is "headspace cpu profile"; pprof reads it as usual.
var Profile = Kind{Name: "CPU profile", stamp: func(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("a profile must be gzipped: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Comment = profileComment
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}, recognize: func(head, _ []byte) bool {
	zr, err := gzip.NewReader(bytes.NewReader(head))
	return err == nil && zr.Comment == profileComment
}}

const profileComment = stampWord + " cpu profile"

// JSON is a JSON object whose first member is "format": format (such as
// "headspace-whatif-profile/1"); a writer that leaves it out has it added.
func JSON(name, format string) Kind {
	return Kind{Name: name, stamp: func(b []byte) ([]byte, error) {
		if jsonFormat(b) == format {
			return b, nil
		}
		i := bytes.IndexByte(b, '{')
		if i < 0 {
			return nil, fmt.Errorf("%s: not a JSON object", name)
		}
		f, _ := json.Marshal(format)
		rest := bytes.TrimLeft(b[i+1:], " \t\r\n")
		sep := ","
		if len(rest) > 0 && rest[0] == '}' {
			sep = ""
		}
		return append(append(append([]byte{}, b[:i+1]...), `"format":`+string(f)+sep...), b[i+1:]...), nil
	}, recognize: func(head, _ []byte) bool { return jsonFormat(head) == format }}
}

// jsonFormat is the string value of b's first member if it is "format".
func jsonFormat(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	if t, err := dec.Token(); err != nil || t != "format" {
		return ""
	}
	t, err := dec.Token()
	if err != nil {
		return ""
	}
	s, _ := t.(string)
	return s
}

// CheckKind is Check, and if path names an existing regular file that is
// not empty, it must be one of kind k that headspace wrote (ErrRefused
// otherwise). Run it on every output before measuring.
func CheckKind(path string, k Kind) error {
	if err := Check(path); err != nil {
		return Refusef("%v", err)
	}
	target, inPlace, err := resolve(path)
	if err != nil || inPlace {
		return err
	}
	head, tail, err := sample(target)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(head) == 0 {
		return nil
	}
	if err != nil {
		return Refusef("cannot read %s to see what it is: %v", path, pathErr(err))
	}
	if !k.recognize(head, tail) {
		return Refusef("%s exists and is not a %s that headspace wrote; refusing to replace it: remove it or choose another path", path, k.Name)
	}
	return nil
}

// sample reads the first and last sampleSize bytes of the regular file at
// path (opened without following into a device or pipe).
func sample(path string) (head, tail []byte, err error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	head = make([]byte, min(fi.Size(), sampleSize))
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, nil, err
	}
	if fi.Size() <= sampleSize {
		return head, head, nil
	}
	tail = make([]byte, sampleSize)
	if _, err := f.ReadAt(tail, fi.Size()-sampleSize); err != nil {
		return nil, nil, err
	}
	return head, tail, nil
}

// WriteKind writes what write produces to path as a file of kind k: it
// refuses (CheckKind) a file headspace did not write for this purpose,
// stamps the bytes, and writes them atomically (Write).
func WriteKind(path string, k Kind, write func(io.Writer) error) error {
	if err := CheckKind(path, k); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	b, err := k.Stamp(buf.Bytes())
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return WriteBytes(path, b)
}

// WriteKindTo is WriteKind with an io.WriterTo.
func WriteKindTo(path string, k Kind, w io.WriterTo) error {
	return WriteKind(path, k, func(f io.Writer) error { _, err := w.WriteTo(f); return err })
}

// WriteKindBytes is WriteKind with data.
func WriteKindBytes(path string, k Kind, data []byte) error {
	return WriteKind(path, k, func(f io.Writer) error { _, err := f.Write(data); return err })
}

// interrupt is the context whose end stops a wait to open a pipe
// (StopOn).
var interrupt struct {
	sync.Mutex
	ctx context.Context
}

// StopOn makes ctx's end (the command's SIGINT) stop every wait of
// OpenInPlace, including those of writes that take no context. main
// calls it once with its signal context.
func StopOn(ctx context.Context) {
	interrupt.Lock()
	interrupt.ctx = ctx
	interrupt.Unlock()
}

func stopCtx() context.Context {
	interrupt.Lock()
	defer interrupt.Unlock()
	if interrupt.ctx == nil {
		return context.Background()
	}
	return interrupt.ctx
}

// InPlace says whether path is written in place rather than replaced:
// a device, a named pipe, or a path reached through /dev or /proc (such
// as /dev/stdout, even when it leads to a regular file).
func InPlace(path string) bool {
	_, inPlace, err := resolve(path)
	return err == nil && inPlace
}

// OpenInPlace opens path, a target written in place, for writing: in
// append mode for a regular file (/dev/stdout redirected to one), and
// without blocking for a pipe: while no reader has it open the open is
// retried every 20 ms until ctx or StopOn's context ends. The file's
// writes stop with an error when either context ends.
func OpenInPlace(ctx context.Context, path string) (*os.File, error) {
	stop := stopCtx()
	for {
		f, err := openInPlace(path)
		if err == nil {
			// A pipe's writes wait in the poller: a deadline ends them.
			context.AfterFunc(stop, func() { f.SetWriteDeadline(time.Now()) })
			context.AfterFunc(ctx, func() { f.SetWriteDeadline(time.Now()) })
			return f, nil
		}
		if !noReader(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: waiting for a reader: %w", path, ctx.Err())
		case <-stop.Done():
			return nil, fmt.Errorf("%s: waiting for a reader: %w", path, stop.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// OpenRegular opens path for reading only if it is a regular file (after
// symbolic links): a named pipe or a device is refused without being
// opened (a pipe's open would block, a device may never end).
func OpenRegular(path string) (*os.File, error) {
	if !openNeverBlocks {
		// Without O_NONBLOCK, a pipe must be seen before it is opened.
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, notRegular(path, fi.Mode())
		}
	}
	f, err := openReadNonblock(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	return f, nil
}

func notRegular(path string, m fs.FileMode) error {
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file (%s)", ModeName(m))}
}

// ModeName names a file type for messages: "a named pipe", "a symbolic
// link", "a directory".
func ModeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return strings.TrimSpace(m.Type().String())
}

// ReadFileLimit reads the regular file at path (OpenRegular) whole, if it
// holds at most limit bytes; a longer one is an error naming the limit,
// read no further than that.
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes, the most it may hold", path, limit)
	}
	return b, nil
}

// Beside is where a partial or smaller output goes when a complete one
// is kept at path: "r.txt" with tag "partial" gives "r.partial.txt".
func Beside(path, tag string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + tag + ext
}

// PartialPath is where a partial run writes the output meant for path:
// path itself if nothing complete is there (no file, an empty one, or a
// target written in place), else Beside(path, "partial"). A partial run
// never replaces a complete file.
func PartialPath(path string) string {
	if InPlace(path) {
		return path
	}
	target, err := Target(path)
	if err != nil {
		return path
	}
	if fi, err := os.Stat(target); err == nil && fi.Size() > 0 {
		return Beside(path, "partial")
	}
	return path
}

// ProcessGone says whether no process pid exists (so what it left behind,
// a temporary file or a staging directory, may be removed). Where that
// cannot be asked, no process counts as gone.
func ProcessGone(pid int) bool { return !alive(pid) }
