package blobstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// TestClassify checks the causes the Store maps without an object store:
// refused credentials, a refused connection, the io/fs sentinels of fail,
// and an error of no known cause. The object store's own codes are checked
// against a real server by TestConformance and TestOpenBucketErrors.
func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want error
	}{
		{&smithy.GenericAPIError{Code: "InvalidAccessKeyId"}, driver.ErrUnavailable},
		{&smithy.GenericAPIError{Code: "SignatureDoesNotMatch"}, driver.ErrUnavailable},
		{&smithy.GenericAPIError{Code: "NoSuchBucket"}, driver.ErrUnavailable},
		{&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}, driver.ErrUnavailable},
		{fmt.Errorf("blobstore: stat: %w", fs.ErrNotExist), driver.ErrNotFound},
		{fmt.Errorf("blobstore: commit: %w", fs.ErrExist), driver.ErrAlreadyExists},
		{&smithy.GenericAPIError{Code: "InternalError"}, nil},
	}
	for _, c := range cases {
		err := classify(fmt.Errorf("op: %w", c.err))
		if got := driver.Category(err); got != c.want {
			t.Errorf("%v: category %v, want %v", c.err, got, c.want)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%v: the cause is lost", c.err)
		}
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
}
