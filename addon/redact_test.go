package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge/addon"
)

func TestDefaultRedact(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"nothing to redact", "deployment: admission webhook is not ready", "deployment: admission webhook is not ready"},
		{"key=value", "login failed: password=hunter2, retrying", "login failed: password=[REDACTED], retrying"},
		{"key: value, any case", "Token: abc.def expired", "Token: [REDACTED] expired"},
		{"quoted value", `secret "s3cr3t" rejected`, `secret "[REDACTED]" rejected`},
		{"a longer key", "db_password=x; apiKey=y", "db_password=[REDACTED]; apiKey=[REDACTED]"},
		{"bearer scheme", "Authorization: Bearer eyJhbGc rejected", "Authorization: Bearer [REDACTED] rejected"},
		{"URL user information", "pull https://bot:hunter2@registry.example/mesh failed", "pull https://[REDACTED]@registry.example/mesh failed"},
		{"a key in prose is left alone", "the token expired", "the token expired"},
		{"an address without user information", "mail admin@example.com", "mail admin@example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, addon.DefaultRedact(tc.in))
		})
	}
}
