package drivertest

import "github.com/hybridctx/hybridctx/workspace/driver"

// wrapReader counts the bytes read from r. It returns a different type for
// each combination of r's optional capabilities, so that type assertions on
// the wrapper give the same answers as on r.
func wrapReader(i *Instrumented, r driver.Reader) driver.Reader {
	base := &reader{i: i, r: r}
	ra, isRange := r.(driver.RangeReader)
	rs, isRestat := r.(driver.Restatter)
	switch {
	case isRange && isRestat:
		return &rangeRestatReader{reader: base, ra: ra, rs: rs}
	case isRange:
		return &rangeReader{reader: base, ra: ra}
	case isRestat:
		return &restatReader{reader: base, rs: rs}
	}
	return base
}

type reader struct {
	i *Instrumented
	r driver.Reader
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.i.c.bytesRead.Add(int64(n))
	return n, err
}

func (r *reader) Close() error      { return r.r.Close() }
func (r *reader) Info() driver.Info { return r.r.Info() }

func (r *reader) readAt(ra driver.RangeReader, p []byte, off int64) (int, error) {
	n, err := ra.ReadAt(p, off)
	r.i.c.bytesRead.Add(int64(n))
	return n, err
}

type rangeReader struct {
	*reader
	ra driver.RangeReader
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) { return r.readAt(r.ra, p, off) }

type restatReader struct {
	*reader
	rs driver.Restatter
}

func (r *restatReader) Restat() (driver.Info, error) { return r.rs.Restat() }

type rangeRestatReader struct {
	*reader
	ra driver.RangeReader
	rs driver.Restatter
}

func (r *rangeRestatReader) ReadAt(p []byte, off int64) (int, error) { return r.readAt(r.ra, p, off) }
func (r *rangeRestatReader) Restat() (driver.Info, error)            { return r.rs.Restat() }
