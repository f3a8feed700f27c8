package ondisk_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/ondisk"
)

// Write a small dataset as PNG in tar shards, open it, and load a sample:
// Fetch reads its bytes, Decode turns them into pixels (Fill does both).
func Example() {
	tmp, err := os.MkdirTemp("", "ondisk-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "data")
	src := datasets.Synthetic{Width: 32, Height: 32, Classes: 10, N: 10, Seed: 1}
	m, err := ondisk.Write(context.Background(), dir, src, ondisk.WriteOptions{Format: "png", Layout: "shards", ShardSize: 4})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(m.Files), "shards:", m.Files[0].Name)

	d, err := ondisk.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	data, err := d.Fetch(context.Background(), 5, nil)
	if err != nil {
		log.Fatal(err)
	}
	s := datasets.NewSample(d.Shape())
	if err := d.Decode(5, data, s); err != nil {
		log.Fatal(err)
	}
	want := datasets.NewSample(32, 32)
	src.Fill(5, want)
	fmt.Println("lossless:", string(s.Image.Pix) == string(want.Image.Pix), "label:", s.Label == want.Label)
	// Output:
	// 3 shards: shard-000000.tar
	// lossless: true label: true
}
