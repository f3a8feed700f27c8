//go:build unix

package ondisk

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUploadRefusesPipesAndDanglingLinks: a dataset holding a named pipe
// or a symbolic link that leads nowhere is refused before anything is
// uploaded, naming the file (bad input, exit 2), never half uploaded.
func TestUploadRefusesPipesAndDanglingLinks(t *testing.T) {
	t.Setenv("HEADSPACE_CACHE", t.TempDir())
	j := encodeTest(t, "jpeg", 20, 12, 1)

	pipe := t.TempDir()
	writeFile(t, filepath.Join(pipe, "cat", "1.jpg"), j)
	writeFile(t, filepath.Join(pipe, "dog", "2.jpg"), j)
	fifo := filepath.Join(pipe, "dog", "3.jpg")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	uploadRefused(t, "upload-pipe", pipe, fifo+": not a regular file")

	dangling := t.TempDir()
	writeFile(t, filepath.Join(dangling, "cat", "1.jpg"), j)
	link := filepath.Join(dangling, "cat", "2.jpg")
	if err := os.Symlink(filepath.Join(dangling, "nowhere.jpg"), link); err != nil {
		t.Fatal(err)
	}
	uploadRefused(t, "upload-dangling", dangling, link+": a symbolic link that leads nowhere")
}
