package ondisk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/headspace-bench/headspace/datasets/bucket"
)

// VerifyRemote is Verify of the headspace dataset under c's URL, as
// `headspace dataset upload` put it there (its manifest at the prefix's
// top, every file beside it, named as in the directory): it lists the
// prefix, reads the manifest and checks each file the manifest lists,
// its size as listed and the SHA-256 of its bytes. It returns the
// manifest checked. A server that cannot be reached fails the listing
// with the bucket's error, naming the server; a prefix that holds no
// manifest is refused naming what it holds; a file missing, of another
// size or another checksum is ErrCorrupt, naming the object.
func VerifyRemote(ctx context.Context, c *bucket.Client) (*Manifest, error) {
	meta, err := loadRemote(ctx, c)
	if err != nil {
		return nil, err
	}
	where := c.URL().String()
	if meta.kind != "headspace" {
		return nil, fmt.Errorf("ondisk: %s: a %s dataset of %d objects, with no %s (headspace dataset write) to verify them against", where, meta.kind, meta.info.Objects, ManifestName)
	}
	var missing []string
	var buf []byte
	for _, fe := range meta.m.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		size, ok := meta.sizes[fe.Name]
		switch {
		case !ok:
			missing = append(missing, fe.Name)
			continue
		case size != fe.Size:
			return nil, corruptf("ondisk: verify: %s: %d bytes, manifest says %d", c.Where(fe.Name), size, fe.Size)
		}
		b, err := c.GetListed(ctx, bucket.Object{Name: fe.Name, Size: size, ETag: meta.etags[fe.Name]}, buf)
		if err != nil {
			return nil, fmt.Errorf("ondisk: verify: %w", err)
		}
		buf = b
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != fe.SHA256 {
			return nil, corruptf("ondisk: verify: %s: sha256 %s, manifest says %s", c.Where(fe.Name), got, fe.SHA256)
		}
	}
	if len(missing) > 0 {
		names := strings.Join(missing[:min(len(missing), 5)], ", ")
		if len(missing) > 5 {
			names += fmt.Sprintf(" and %d more", len(missing)-5)
		}
		return nil, corruptf("ondisk: verify: %s: %d of the %d files its manifest lists are missing: %s", where, len(missing), len(meta.m.Files), names)
	}
	return meta.m, nil
}
