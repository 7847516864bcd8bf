// Package all registers every workspace backend this module ships with
// package backend: postgres:// and postgresql:// (backend/postgres) and
// s3:// (backend/s3). The command line imports it; a program imports it for
// that effect alone:
//
//	import _ "github.com/hybridctx/hybridctx/backend/all"
package all

import (
	// Each registers its URL schemes with package backend.
	_ "github.com/hybridctx/hybridctx/backend/postgres"
	_ "github.com/hybridctx/hybridctx/backend/s3"
)
