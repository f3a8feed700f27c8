package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/headspace-bench/headspace/datasets"
	"github.com/headspace-bench/headspace/datasets/bucket"
	"github.com/headspace-bench/headspace/datasets/ondisk"
	"github.com/headspace-bench/headspace/harness/link"
	"github.com/headspace-bench/headspace/harness/s3server"
)

// RemoteBucket is the bucket a remote comparison reads, made once for the
// whole run: the pinned S3 server (package s3server) on 127.0.0.1 over a
// temporary directory, the dataset uploaded into it once in each layout,
// and one emulated link (package link) in front of it that both sides
// reach it through.
type RemoteBucket struct {
	Server *s3server.Server
	Link   *link.Link
	// URLs is each layout's s3:// URL; Costs what a sample of it moves.
	URLs  map[string]string
	Costs map[string]LayoutCost
	work  string
}

// RemoteBucketName is the bucket StartRemote makes.
const RemoteBucketName = "peer"

// StartRemote writes src (JPEG, natural content is the caller's choice)
// once as one file per image and once as tar shards of shardSize, starts
// the server, uploads the images as an ImageFolder (class-NN folders by
// the manifest's labels) and the shards, and starts link lc in front of
// the server. It puts the server's credentials (and region) in this
// process's environment, where package bucket reads them, and unsets
// AWS_PROFILE and AWS_SESSION_TOKEN. Close stops and removes everything.
func StartRemote(ctx context.Context, src datasets.Synthetic, shardSize int, lc link.Config) (_ *RemoteBucket, err error) {
	work, err := os.MkdirTemp("", "headspace-peer-remote-")
	if err != nil {
		return nil, err
	}
	b := &RemoteBucket{work: work, URLs: map[string]string{}}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if b.Costs, err = writeLayouts(ctx, work, src, shardSize); err != nil {
		return nil, err
	}
	if b.Server, err = s3server.Start(ctx, s3server.Options{Root: filepath.Join(work, "root")}); err != nil {
		return nil, err
	}
	useCredentials(b.Server)
	if err := b.upload(ctx); err != nil {
		return nil, err
	}
	if b.Link, err = link.Start(ctx, b.Server.Addr(), lc); err != nil {
		return nil, err
	}
	return b, nil
}

// writeLayouts writes src under work in each of RemoteLayouts, the
// ImageFolder as hard links to one file per image, and returns what a
// sample of each layout costs.
func writeLayouts(ctx context.Context, work string, src datasets.Synthetic, shardSize int) (map[string]LayoutCost, error) {
	files, err := ondisk.Write(ctx, filepath.Join(work, "files"), src, ondisk.WriteOptions{Format: "jpeg", Layout: "files"})
	if err != nil {
		return nil, fmt.Errorf("remote: write the images: %w", err)
	}
	shards, err := ondisk.Write(ctx, filepath.Join(work, Shards), src, ondisk.WriteOptions{Format: "jpeg", Layout: "shards", ShardSize: shardSize})
	if err != nil {
		return nil, fmt.Errorf("remote: write the shards: %w", err)
	}
	folder := filepath.Join(work, ImageFolder)
	var imageBytes int64
	for i, f := range files.Files {
		dst := filepath.Join(folder, fmt.Sprintf("class-%02d", files.Labels[i]), filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Link(filepath.Join(work, "files", filepath.FromSlash(f.Name)), dst); err != nil {
			return nil, fmt.Errorf("remote: imagefolder: %w", err)
		}
		imageBytes += f.Size
	}
	n := float64(src.N)
	return map[string]LayoutCost{
		ImageFolder: {BytesPerSample: float64(imageBytes) / n, RequestsPerSample: 1},
		Shards:      {BytesPerSample: float64(shards.Bytes()) / n, RequestsPerSample: float64(len(shards.Files)) / n},
	}, nil
}

// useCredentials puts server's credentials and region in this process's
// environment, where package bucket reads them as a user gives them, and
// unsets AWS_PROFILE and AWS_SESSION_TOKEN.
func useCredentials(server *s3server.Server) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": server.AccessKey, "AWS_SECRET_ACCESS_KEY": server.SecretKey, "AWS_REGION": s3server.Region} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	os.Unsetenv("AWS_SESSION_TOKEN")
}

// upload makes the bucket on the server and uploads each layout written
// under the work directory to its prefix, recording its URL.
func (b *RemoteBucket) upload(ctx context.Context) error {
	direct := bucket.Options{Endpoint: b.Server.Endpoint()}
	mk, err := bucket.OpenUnchecked(bucket.URL{Bucket: RemoteBucketName}, direct)
	if err != nil {
		return err
	}
	if err := mk.MakeBucket(ctx); err != nil {
		return fmt.Errorf("remote: make bucket: %w", err)
	}
	for _, layout := range RemoteLayouts {
		u, err := bucket.ParseURL(fmt.Sprintf("s3://%s/%s", RemoteBucketName, layout))
		if err != nil {
			return err
		}
		c, err := bucket.Open(ctx, u, direct)
		if err != nil {
			return err
		}
		if _, err := ondisk.Upload(ctx, c, filepath.Join(b.work, layout)); err != nil {
			return fmt.Errorf("remote: upload %s: %w", layout, err)
		}
		b.URLs[layout] = u.String()
	}
	return nil
}

// Env is the peer's environment: the link's URL as AWS_ENDPOINT_URL and
// the server's credentials, each overriding the caller's (StartRemote
// unset AWS_PROFILE and AWS_SESSION_TOKEN, which the script inherits).
func (b *RemoteBucket) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + b.Link.URL(),
		"AWS_ENDPOINT_URL_S3=" + b.Link.URL(),
		"AWS_ACCESS_KEY_ID=" + b.Server.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + b.Server.SecretKey,
		"AWS_REGION=" + s3server.Region,
	}
}

// Close stops the link and the server and removes the datasets.
func (b *RemoteBucket) Close() error {
	var errs []error
	if b.Link != nil {
		errs = append(errs, b.Link.Close())
	}
	if b.Server != nil {
		errs = append(errs, b.Server.Close())
	}
	errs = append(errs, os.RemoveAll(b.work))
	return errors.Join(errs...)
}
