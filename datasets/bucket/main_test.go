package bucket_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/headspace-bench/headspace/harness/s3server"
	"go.uber.org/goleak"
)

// srv is the real S3-compatible server every test of the package talks to
// (versitygw, built by ci/versitygw.sh; a missing binary fails the tests).
var srv *s3server.Server

func TestMain(m *testing.M) {
	var err error
	srv, err = s3server.Start(context.Background(), s3server.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	os.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	os.Setenv("AWS_REGION", s3server.Region)
	os.Unsetenv("AWS_PROFILE")
	os.Unsetenv("AWS_ENDPOINT_URL")
	os.Unsetenv("AWS_ENDPOINT_URL_S3")
	code := m.Run()
	srv.Close()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}
