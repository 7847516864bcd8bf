// Package blobstore keeps workspace bodies in object storage through
// gocloud.dev/blob: S3 and S3-compatible servers by URL (s3://bucket?…), or
// any *blob.Bucket a host opens itself. Records live elsewhere (package
// pgstore with BodiesElsewhere); package backend wires the two together for
// s3://bucket?…&index=postgres://… URLs. One *Store implements
// driver.Bodies, driver.Locker and io.Closer.
//
// # Layout
//
//	sha256/<hex>        a body: the exact bytes, named by their SHA-256
//	uploads/<id>        a large body still being written
//
// # Writes
//
// The key of a body (its digest) is known only when the writer commits, so a
// writer keeps up to Options.SpoolBytes (4 MiB by default) in memory and
// commits it with one create-only PUT (WriterOptions.IfNotExist, sent as
// If-None-Match: *): the object store itself picks exactly one winner among
// concurrent writers of one key, and the losers see fs.ErrExist. A larger
// body streams into an uploads/ object as it is written (multipart, in
// parts of 5 MiB, never buffered whole), and Commit streams that object into
// its final key with the same create-only PUT, or copies it in place
// server-side for a replace, then deletes it. A replace (the Store's repair
// of a corrupt body) is an unconditional overwrite.
//
// # Reads
//
// Open issues one GET; on S3 the reader remembers the ETag (driver
// Info.Version), range reads (ReadAt) carry If-Match so they can only see the
// same object, and Restat re-reads the ETag. The Store re-hashes every body
// it reads; nothing here trusts the object store's own checksums.
//
// # Size limits
//
// A body is at most Options.MaxBodyBytes (default DefaultMaxBodyBytes,
// 5 GiB: the largest object S3 can copy in one request); a larger one fails
// its Write with an error wrapping driver.ErrTooLarge.
//
// # Locks and leftovers
//
// Without Options.Locker, Lock excludes only within this process; package
// backend passes the PostgreSQL index, whose advisory locks exclude across
// machines. A writer that dies mid-upload leaves an uploads/ object (or an
// unfinished multipart upload, which only a bucket lifecycle rule removes);
// SweepUploads deletes uploads/ objects older than a given age.
package blobstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/internal/keylock"
)

// Object key prefixes inside the bucket.
const (
	bodyPrefix   = "sha256/"
	uploadPrefix = "uploads/"
)

// Defaults of Options.
const (
	// DefaultSpoolBytes is how much of a body a writer keeps in memory
	// before it streams to an upload object.
	DefaultSpoolBytes = 4 << 20
	// DefaultMaxBodyBytes is the largest body stored by default.
	DefaultMaxBodyBytes int64 = 5 << 30
	// DefaultUploadMaxAge is the age past which SweepUploads is meant to
	// remove unfinished uploads.
	DefaultUploadMaxAge = 24 * time.Hour
	// partBytes is the multipart part size, and maxConcurrency the number
	// of parts in flight, of every streamed upload.
	partBytes      = 5 << 20
	maxConcurrency = 2
	// conflictRetries bounds the retries of a create-only PUT that the
	// object store answered with 409 ConditionalRequestConflict.
	conflictRetries = 3
	// cleanupTimeout bounds the removal of an aborted upload.
	cleanupTimeout = 30 * time.Second
)

var (
	// ErrInvalidURL means the bucket URL could not be used.
	ErrInvalidURL = errors.New("invalid bucket URL")
	// ErrClosed means the Store was closed.
	ErrClosed = errors.New("object-store workspace is closed")
)

// Options tune New. nil means defaults.
type Options struct {
	// Locker, when set, is the lock Lock delegates to, so repairs are
	// serialized across every process sharing the bucket; without it Lock
	// excludes only within this process.
	Locker driver.Locker
	// SpoolBytes is how much of a body stays in memory before it streams
	// to an upload object; 0 means DefaultSpoolBytes.
	SpoolBytes int
	// MaxBodyBytes bounds a stored body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// Store keeps bodies in one bucket. It is safe for concurrent use.
type Store struct {
	bucket  *blob.Bucket
	locker  driver.Locker
	spool   int
	maxBody int64
	closed  atomic.Bool
}

// OpenBucket opens the bucket of an s3:// URL (gocloud.dev/blob query
// parameters: region, endpoint, use_path_style, disable_https, prefix, …;
// credentials come from the usual AWS sources, such as AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY) and checks that it exists and answers with these
// credentials. Errors wrap ErrInvalidURL or driver.ErrUnavailable and name the
// bucket and endpoint only.
//
// The AWS SDK's own log lines are discarded; OpenBucketWith routes them to
// a logger instead.
func OpenBucket(ctx context.Context, bucketURL string) (*blob.Bucket, error) {
	return OpenBucketWith(ctx, bucketURL, nil)
}

// OpenBucketWith is OpenBucket with options (nil = defaults): on s3://, the
// AWS SDK's log lines go to opts.Logger, never to standard error.
func OpenBucketWith(ctx context.Context, bucketURL string, opts *BucketOptions) (*blob.Bucket, error) {
	var o BucketOptions
	if opts != nil {
		o = *opts
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u, err := url.Parse(bucketURL)
	if err != nil || u.Host == "" || u.Scheme == "" {
		return nil, fmt.Errorf("%w: want SCHEME://BUCKET?PARAMS", ErrInvalidURL)
	}
	name := describeURL(u)
	if u.Scheme == "s3" {
		// Every body is re-hashed on read, so the SDK's own response
		// checksums add nothing; left on, the SDK logs a warning on
		// standard error for each multipart object it reads.
		q := u.Query()
		if !q.Has("response_checksum_validation") {
			q.Set("response_checksum_validation", "when_required")
			u.RawQuery = q.Encode()
			bucketURL = u.String()
		}
	}
	var b *blob.Bucket
	if u.Scheme == "s3" {
		b, err = openS3(ctx, u, o.Logger)
	} else {
		b, err = blob.OpenBucket(ctx, bucketURL)
	}
	if err != nil {
		if !blob.DefaultURLMux().ValidBucketScheme(u.Scheme) {
			return nil, fmt.Errorf("%w: %s: no %s:// driver in this build", ErrInvalidURL, name, u.Scheme)
		}
		// The opener's message quotes the whole URL; keep it out.
		msg := urlText.ReplaceAllString(oneLine(err), "URL")
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalidURL, name, msg)
	}
	ok, err := b.IsAccessible(ctx)
	switch {
	case ctx.Err() != nil:
		b.Close()
		return nil, fmt.Errorf("open %s: %w", name, ctx.Err())
	case err != nil:
		b.Close()
		return nil, unavailable(name, accessProblem(err))
	case !ok:
		b.Close()
		return nil, unavailable(name, "no such bucket")
	}
	return b, nil
}

// describeURL names a bucket URL without its query, except the endpoint.
func describeURL(u *url.URL) string {
	s := u.Scheme + "://" + u.Host
	if ep := u.Query().Get("endpoint"); ep != "" {
		if e, err := url.Parse(ep); err == nil {
			e.User = nil
			ep = e.Redacted()
		}
		s += " at " + ep
	}
	if p := u.Query().Get("prefix"); p != "" {
		s += " (prefix " + p + ")"
	}
	return s
}

// accessProblem explains why a bucket did not answer.
func accessProblem(err error) string {
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return "access denied (check the credentials): " + oneLine(err)
	case gcerrors.NotFound:
		return "no such bucket"
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
			return "credentials refused (" + ae.ErrorCode() + ")"
		}
	}
	return "cannot reach the bucket: " + oneLine(err)
}

// urlText matches a URL quoted in an error message.
var urlText = regexp.MustCompile(`"?[A-Za-z][A-Za-z0-9+.-]*://[^\s"]*[^\s":]"?`)

// oneLine is err's message on one line.
func oneLine(err error) string { return oneLineText(err.Error()) }

// oneLineText is s on one line.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// New returns a Store over bucket, which it takes over (Close closes it).
// It does no I/O.
func New(bucket *blob.Bucket, opts *Options) (*Store, error) {
	if bucket == nil {
		return nil, errors.New("blobstore: nil bucket")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.SpoolBytes == 0 {
		o.SpoolBytes = DefaultSpoolBytes
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.SpoolBytes < 0 || o.MaxBodyBytes < 0 {
		return nil, errors.New("blobstore: negative size option")
	}
	s := &Store{bucket: bucket, locker: o.Locker, spool: o.SpoolBytes, maxBody: o.MaxBodyBytes}
	if s.locker == nil {
		s.locker = new(keylock.Locks)
	}
	return s, nil
}

// Close closes the bucket. It is safe to call more than once.
func (s *Store) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		return s.bucket.Close()
	}
	return nil
}

// Bucket returns the underlying bucket, for tools and tests.
func (s *Store) Bucket() *blob.Bucket { return s.bucket }

// Lock takes the lock of key from Options.Locker, or from an in-process
// lock when none was given.
func (s *Store) Lock(ctx context.Context, key string) (func() error, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.locker.Lock(ctx, key)
}

// SweepUploads deletes upload objects last modified more than olderThan ago
// (their writer died) and reports how many it deleted.
func (s *Store) SweepUploads(ctx context.Context, olderThan time.Duration) (_ int, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	cutoff := time.Now().Add(-olderThan)
	it := s.bucket.List(&blob.ListOptions{Prefix: uploadPrefix})
	n := 0
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fail(ctx, "sweep uploads", err)
		}
		if obj.IsDir || !obj.ModTime.Before(cutoff) {
			continue
		}
		if err := s.bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return n, fail(ctx, "sweep uploads", err)
		}
		n++
	}
}

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// fail wraps a storage error, mapping the object store's not-found and
// precondition codes to fs.ErrNotExist and fs.ErrExist, and preferring ctx's
// error when ctx is done.
func fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("blobstore: %s: %w (%s)", op, cerr, oneLine(err))
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("blobstore: %s: %w", op, fs.ErrNotExist)
	case gcerrors.FailedPrecondition:
		return fmt.Errorf("blobstore: %s: %w", op, fs.ErrExist)
	}
	return fmt.Errorf("blobstore: %s: %w", op, err)
}

// checkKey checks that key is 64 lowercase hex digits.
func checkKey(key string) error {
	if len(key) != 64 {
		return fmt.Errorf("blobstore: key is not 64 hex digits (%d bytes): %w", len(key), fs.ErrInvalid)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("blobstore: key is not lowercase hex: %w", fs.ErrInvalid)
		}
	}
	return nil
}

// newUploadKey names a fresh upload object.
func newUploadKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return uploadPrefix + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
