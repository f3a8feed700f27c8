package driver

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/headspace-bench/headspace/harness/resultfile"
)

// Place writes data, the bytes of a whole result file made elsewhere (a
// run filed into the history store, a generated night), at target with
// permission perm, byte for byte, and never over anything: through a
// temporary file in target's folder, synced, then a hard link, so a
// reader sees no file or the whole one, and if another writer got there
// first Place fails with an error that is fs.ErrExist. data must read as
// a result file holding results (else ErrRefused): the history's files
// are result files too, written here, not beside the driver.
func Place(target string, data []byte, perm fs.FileMode) error {
	if rs, _, err := resultfile.Parse(bytes.NewReader(data), target); err != nil || len(rs) == 0 {
		if err == nil {
			err = errors.New("it holds no results")
		}
		return fmt.Errorf("results: %s: not a result file: %w", target, errors.Join(resultfile.ErrRefused, err))
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), ".place-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	write := func() error {
		if _, err := tmp.Write(data); err != nil {
			return err
		}
		if err := tmp.Chmod(perm); err != nil {
			return err
		}
		return tmp.Sync()
	}
	if err := write(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", target, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	if err := os.Link(tmp.Name(), target); err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	return nil
}
