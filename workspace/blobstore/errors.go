package blobstore

import (
	"errors"
	"fmt"
	"iter"

	"github.com/aws/smithy-go"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"gocloud.dev/gcerrors"
)

// errUnavailable is the text of the errors of a bucket that could not be
// used (unreachable, missing, or the credentials were refused); they are
// in the portable category driver.ErrUnavailable.
var errUnavailable = errors.New("object-store bucket not available")

// unavailable is the error of a bucket that could not be used, in the
// portable category driver.ErrUnavailable.
func unavailable(name, why string) error {
	return driver.Wrap(driver.ErrUnavailable, fmt.Errorf("%w: %s: %s", errUnavailable, name, why))
}

// classify marks err with the portable category of its cause
// (docs/workspace.md, "Error categories"): the object store's error code,
// refused credentials (ErrUnavailable), or an operating-system error such
// as a refused connection (driver.FromOS). An error already marked, or of
// none of these causes, is returned as it is.
func classify(err error) error {
	if err == nil || driver.Category(err) != nil {
		return err
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return driver.Wrap(driver.ErrNotFound, err)
	case gcerrors.AlreadyExists, gcerrors.FailedPrecondition:
		return driver.Wrap(driver.ErrAlreadyExists, err)
	case gcerrors.PermissionDenied:
		return driver.Wrap(driver.ErrPermission, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "NoSuchBucket":
			return driver.Wrap(driver.ErrUnavailable, err)
		}
	}
	return driver.FromOS(err)
}

// markErr classifies the error *p in place; the exported methods defer it.
func markErr(p *error) { *p = classify(*p) }

// markSeq classifies the errors seq yields.
func markSeq[T any](seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	return driver.ClassifySeq(seq, classify)
}
