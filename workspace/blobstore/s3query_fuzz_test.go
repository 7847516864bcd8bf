package blobstore

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// FuzzParseS3Query feeds arbitrary query strings to the s3:// parameter
// parser: it never panics, accepts only the documented parameters, and what
// it accepts it applies (path style, HTTPS, endpoint and prefix as given).
func FuzzParseS3Query(f *testing.F) {
	for _, seed := range []string{
		"region=us-east-1&endpoint=http://127.0.0.1:9000&use_path_style=true&disable_https=true",
		"prefix=a/b/&anonymous=true&profile=dev",
		"response_checksum_validation=when_required&request_checksum_calculation=when_supported",
		"s3ForcePathStyle=false&hostname_immutable=1",
		"colour=red", "use_path_style=maybe", "response_checksum_validation=never", "region=&region=x", "%zz", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		c, err := parseS3Query(q)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for key := range q {
			if !slices.Contains(s3Params, key) {
				t.Fatalf("accepted unknown parameter %q", key)
			}
		}
		var o s3.Options
		for _, fn := range c.client {
			fn(&o)
		}
		if q.Has("endpoint") && q.Get("endpoint") != "" && (o.BaseEndpoint == nil || *o.BaseEndpoint != q.Get("endpoint")) {
			t.Fatalf("endpoint %q not applied", q.Get("endpoint"))
		}
		if c.prefix != q.Get("prefix") {
			t.Fatalf("prefix %q, want %q", c.prefix, q.Get("prefix"))
		}
		if q.Get("disable_https") == "true" && !o.EndpointOptions.DisableHTTPS {
			t.Fatal("disable_https=true not applied")
		}
		if q.Get("use_path_style") == "true" && !o.UsePathStyle {
			t.Fatal("use_path_style=true not applied")
		}
	})
}
