package blobstore

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// BucketOptions tune OpenBucketWith. nil means defaults.
type BucketOptions struct {
	// Logger receives the log lines of the AWS SDK (such as its warning
	// when the instance-metadata service answers only IMDSv1), at
	// slog.LevelWarn for warnings and slog.LevelDebug otherwise. nil
	// discards them: the SDK never writes to standard error itself.
	Logger *slog.Logger
}

// s3Params are the query parameters of an s3:// URL: the region, endpoint
// and credentials profile of the AWS SDK's configuration, and how requests
// are addressed and checked. The SDK finds credentials as it always does
// unless anonymous=true: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the
// shared files (~/.aws/credentials and ~/.aws/config, AWS_PROFILE or
// profile=), web identity, the container endpoint, and last the EC2
// instance-metadata service (off with AWS_EC2_METADATA_DISABLED=true).
var s3Params = []string{"region", "endpoint", "hostname_immutable", "profile", "anonymous",
	"use_path_style", "s3ForcePathStyle", "disable_https",
	"request_checksum_calculation", "response_checksum_validation", "prefix"}

// s3Config is what the query of an s3:// URL asks of the AWS SDK.
type s3Config struct {
	load     []func(*config.LoadOptions) error
	client   []func(*s3.Options)
	endpoint string
	prefix   string
}

// parseS3Query reads the query parameters of an s3:// URL (see s3Params);
// any other parameter, or a malformed value, is an error.
func parseS3Query(q url.Values) (s3Config, error) {
	var c s3Config
	for key, values := range q {
		v := values[0]
		var err error
		switch key {
		case "region":
			c.load = append(c.load, config.WithRegion(v))
		case "endpoint":
			c.endpoint = v
		case "profile":
			c.load = append(c.load, config.WithSharedConfigProfile(v))
		case "prefix":
			c.prefix = v
		case "anonymous":
			err = boolParam(key, v, func() { c.load = append(c.load, config.WithCredentialsProvider(aws.AnonymousCredentials{})) })
		case "use_path_style", "s3ForcePathStyle", "hostname_immutable":
			// An immutable host name is the endpoint used as it is, which
			// is what path-style addressing does.
			err = boolParam(key, v, func() { c.client = append(c.client, func(o *s3.Options) { o.UsePathStyle = true }) })
		case "disable_https":
			err = boolParam(key, v, func() { c.client = append(c.client, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = true }) })
		case "request_checksum_calculation":
			var rc aws.RequestChecksumCalculation
			if rc, err = requestChecksum(v); err == nil {
				c.load = append(c.load, config.WithRequestChecksumCalculation(rc))
			}
		case "response_checksum_validation":
			var rc aws.ResponseChecksumValidation
			if rc, err = responseChecksum(v); err == nil {
				c.load = append(c.load, config.WithResponseChecksumValidation(rc))
			}
		default:
			return s3Config{}, fmt.Errorf("unknown query parameter %q (s3:// takes %v)", key, s3Params)
		}
		if err != nil {
			return s3Config{}, err
		}
	}
	if c.endpoint != "" {
		endpoint := c.endpoint
		c.client = append(c.client, func(o *s3.Options) { o.BaseEndpoint = aws.String(endpoint) })
	}
	return c, nil
}

// openS3 opens the bucket of an s3:// URL with the SDK's logger routed to
// logger.
func openS3(ctx context.Context, u *url.URL, logger *slog.Logger) (*blob.Bucket, error) {
	c, err := parseS3Query(u.Query())
	if err != nil {
		return nil, err
	}
	load := append([]func(*config.LoadOptions) error{config.WithLogger(sdkLogger{logger})}, c.load...)
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	b, err := s3blob.OpenBucket(ctx, s3.NewFromConfig(cfg, c.client...), u.Host,
		&s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
	if err != nil {
		return nil, err
	}
	if c.prefix != "" {
		b = blob.PrefixedBucket(b, c.prefix)
	}
	return b, nil
}

// boolParam calls set when v is true, and fails unless v is a boolean.
func boolParam(key, v string, set func()) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("invalid value for %q: want true or false", key)
	}
	if b {
		set()
	}
	return nil
}

func requestChecksum(v string) (aws.RequestChecksumCalculation, error) {
	switch v {
	case "when_supported":
		return aws.RequestChecksumCalculationWhenSupported, nil
	case "when_required":
		return aws.RequestChecksumCalculationWhenRequired, nil
	}
	return 0, fmt.Errorf("invalid value for %q: want when_supported or when_required", "request_checksum_calculation")
}

func responseChecksum(v string) (aws.ResponseChecksumValidation, error) {
	switch v {
	case "when_supported":
		return aws.ResponseChecksumValidationWhenSupported, nil
	case "when_required":
		return aws.ResponseChecksumValidationWhenRequired, nil
	}
	return 0, fmt.Errorf("invalid value for %q: want when_supported or when_required", "response_checksum_validation")
}

// sdkLogger routes the AWS SDK's log lines to a slog.Logger (nil: nowhere).
type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	if s.l == nil {
		return
	}
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	s.l.Log(context.Background(), level, "AWS SDK: "+oneLineText(fmt.Sprintf(format, v...)))
}
