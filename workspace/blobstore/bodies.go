package blobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/internal/writerstate"
)

var errEnded = errors.New("blobstore: writer already ended")

// NewWriter starts a body. Its upload, if it grows past the spool, runs
// under ctx.
func (s *Store) NewWriter(ctx context.Context) (_ driver.Writer, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return &writer{s: s, ctx: ctx}, nil
}

// writer is one body being written: in memory up to the spool size, then
// streaming into an upload object.
type writer struct {
	s        *Store
	ctx      context.Context
	buf      []byte
	up       *blob.Writer // the upload object's writer, once streaming
	upKey    string
	upCancel context.CancelFunc
	uploaded bool // the upload object is complete
	writerstate.State
}

func streamOptions() *blob.WriterOptions {
	return &blob.WriterOptions{ContentType: "application/octet-stream", BufferSize: partBytes, MaxConcurrency: maxConcurrency}
}

func (w *writer) Write(p []byte) (_ int, retErr error) {
	defer markErr(&retErr)
	if err := w.Check(errEnded); err != nil {
		return 0, err
	}
	if err := w.Admit(len(p), w.s.maxBody, "blobstore: a body"); err != nil {
		return 0, err
	}
	if w.up == nil && len(w.buf)+len(p) <= w.s.spool {
		w.buf = append(w.buf, p...)
		w.N += int64(len(p))
		return len(p), nil
	}
	if w.up == nil {
		if err := w.startUpload(); err != nil {
			w.Err = err
			return 0, err
		}
	}
	m, err := w.up.Write(p)
	w.N += int64(m)
	if err != nil {
		w.Err = fail(w.ctx, "upload", err)
		return m, w.Err
	}
	return m, nil
}

// startUpload opens the upload object and moves the spooled bytes into it.
func (w *writer) startUpload() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.upKey = newUploadKey()
	up, err := w.s.bucket.NewWriter(ctx, w.upKey, streamOptions())
	if err != nil {
		cancel()
		return fail(w.ctx, "start upload", err)
	}
	w.up, w.upCancel = up, cancel
	if len(w.buf) > 0 {
		if _, err := up.Write(w.buf); err != nil {
			return fail(w.ctx, "upload", err)
		}
	}
	w.buf = nil
	return nil
}

// Commit publishes the written bytes under key: create-only with
// If-None-Match: * unless replace, which overwrites.
func (w *writer) Commit(ctx context.Context, key string, replace bool) (retErr error) {
	defer markErr(&retErr)
	if err := w.s.check(ctx); err != nil {
		return err
	}
	if err := w.Check(errEnded); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if w.up != nil && !w.uploaded {
		err := w.up.Close()
		w.upCancel()
		if err != nil {
			w.Err = fail(ctx, "finish upload", err)
			return w.Err
		}
		w.uploaded = true
	}
	final := bodyPrefix + key
	var err error
	switch {
	case !w.uploaded:
		err = w.s.put(ctx, final, !replace, func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(w.buf)), nil
		})
	case replace:
		err = w.s.bucket.Copy(ctx, final, w.upKey, nil)
	default:
		// Skip streaming bytes that are already there; the conditional
		// PUT below still decides a race.
		_, aerr := w.s.bucket.Attributes(ctx, final)
		switch {
		case aerr == nil:
			return fmt.Errorf("blobstore: commit %s: %w", key[:12], fs.ErrExist)
		case gcerrors.Code(aerr) != gcerrors.NotFound:
			return fail(ctx, "commit", aerr)
		}
		err = w.s.put(ctx, final, true, func() (io.ReadCloser, error) {
			return w.s.bucket.NewReader(ctx, w.upKey, nil)
		})
	}
	if err != nil {
		return fail(ctx, "commit "+key[:12], err)
	}
	w.Done, w.buf = true, nil
	if w.uploaded {
		// A failure only leaves an upload object for SweepUploads.
		_ = w.s.bucket.Delete(ctx, w.upKey)
	}
	return nil
}

// put writes the bytes open returns to key, create-only when create is set,
// retrying a few times when the object store reports a conflicting
// concurrent conditional write.
func (s *Store) put(ctx context.Context, key string, create bool, open func() (io.ReadCloser, error)) error {
	for attempt := 0; ; attempt++ {
		r, err := open()
		if err != nil {
			return err
		}
		opts := streamOptions()
		opts.IfNotExist = create
		err = s.bucket.Upload(ctx, key, r, opts)
		r.Close()
		if err == nil || !create || gcerrors.Code(err) == gcerrors.FailedPrecondition || ctx.Err() != nil {
			return err
		}
		var ae smithy.APIError
		if attempt < conflictRetries && errors.As(err, &ae) && ae.ErrorCode() == "ConditionalRequestConflict" {
			continue
		}
		// A server that refuses a conditional PUT as soon as it sees the
		// key taken may reset the connection before the client has sent
		// the body, so the refusal arrives as a transport error. The key
		// being taken now means this writer lost: the Store verifies the
		// winner's bytes before it trusts them.
		if _, aerr := s.bucket.Attributes(ctx, key); aerr == nil {
			return fmt.Errorf("conditional write lost to another writer: %w", fs.ErrExist)
		}
		return err
	}
}

// Abort discards the written bytes and the upload object, if any.
func (w *writer) Abort() (retErr error) {
	defer markErr(&retErr)
	if w.Done {
		return nil
	}
	w.Done, w.buf = true, nil
	if w.up == nil {
		return nil
	}
	if !w.uploaded {
		w.upCancel() // abandons the upload
		_ = w.up.Close()
		return nil
	}
	if w.s.closed.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), cleanupTimeout)
	defer cancel()
	if err := w.s.bucket.Delete(ctx, w.upKey); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fail(ctx, "abort upload", err)
	}
	return nil
}

// Stat describes a body from its attributes, without reading it.
func (s *Store) Stat(ctx context.Context, key string) (_ driver.Info, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return driver.Info{}, err
	}
	if err := checkKey(key); err != nil {
		return driver.Info{}, err
	}
	a, err := s.bucket.Attributes(ctx, bodyPrefix+key)
	if err != nil {
		return driver.Info{}, fail(ctx, "stat "+key[:12], err)
	}
	return driver.Info{Key: key, Size: a.Size, ModTime: a.ModTime.UTC(), Version: a.ETag}, nil
}

// Delete removes a body.
func (s *Store) Delete(ctx context.Context, key string) (retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	return fail(ctx, "delete "+key[:12], s.bucket.Delete(ctx, bodyPrefix+key))
}

// List yields every body; objects under sha256/ whose names are not digests
// are skipped.
func (s *Store) List(ctx context.Context) iter.Seq2[driver.Info, error] {
	return markSeq(func(yield func(driver.Info, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(driver.Info{}, err)
			return
		}
		it := s.bucket.List(&blob.ListOptions{Prefix: bodyPrefix})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(driver.Info{}, fail(ctx, "list", err))
				return
			}
			key := strings.TrimPrefix(obj.Key, bodyPrefix)
			if obj.IsDir || checkKey(key) != nil {
				continue
			}
			info := driver.Info{Key: key, Size: obj.Size, ModTime: obj.ModTime.UTC()}
			var o s3types.Object
			if obj.As(&o) {
				info.Version = aws.ToString(o.ETag)
			}
			if !yield(info, nil) {
				return
			}
		}
	})
}

// Open opens a body with one GET. Reads use ctx.
func (s *Store) Open(ctx context.Context, key string) (_ driver.Reader, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	r, err := s.bucket.NewReader(ctx, bodyPrefix+key, nil)
	if err != nil {
		return nil, fail(ctx, "open "+key[:12], err)
	}
	info := driver.Info{Key: key, Size: r.Size(), ModTime: r.ModTime().UTC()}
	var out s3.GetObjectOutput
	if r.As(&out) {
		info.Version = aws.ToString(out.ETag)
	} else if a, err := s.bucket.Attributes(ctx, bodyPrefix+key); err == nil && a.Size == info.Size {
		info.Version = a.ETag
	}
	return &reader{s: s, ctx: ctx, r: r, info: info}, nil
}

// reader reads one body; it also reads ranges of the same object version
// (driver.RangeReader) and restats it (driver.Restatter).
type reader struct {
	s    *Store
	ctx  context.Context
	r    *blob.Reader
	info driver.Info
}

func (r *reader) Info() driver.Info { return r.info }

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fail(r.ctx, "read", err)
	}
	return n, err
}

func (r *reader) Close() error { return r.r.Close() }

// ReadAt reads len(p) bytes at off, or fewer and io.EOF at the end. On S3
// the request carries If-Match with the opened ETag, so a replaced object
// fails with driver.ErrChanged instead of mixing versions.
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fs.ErrInvalid
	}
	if off >= r.info.Size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.info.Size-off))
	if n == 0 {
		return 0, nil
	}
	opts := &blob.ReaderOptions{BeforeRead: func(as func(any) bool) error {
		var in *s3.GetObjectInput
		if r.info.Version != "" && as(&in) {
			in.IfMatch = aws.String(r.info.Version)
		}
		return nil
	}}
	rr, err := r.s.bucket.NewRangeReader(r.ctx, bodyPrefix+r.info.Key, off, int64(n), opts)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return 0, fmt.Errorf("blobstore: read: %w", driver.ErrChanged)
		}
		return 0, fail(r.ctx, "read", err)
	}
	defer rr.Close()
	m, err := io.ReadFull(rr, p[:n])
	if err != nil {
		return m, fail(r.ctx, "read", err)
	}
	if n < len(p) {
		return m, io.EOF
	}
	return m, nil
}

// Restat reads the object's attributes again.
func (r *reader) Restat() (_ driver.Info, retErr error) {
	defer markErr(&retErr)
	return r.s.Stat(r.ctx, r.info.Key)
}
