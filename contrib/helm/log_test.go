package helmconverge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge/addon"
)

// TestLogHandlerRedactsTextAndOmitsValues: Helm's records reach the logger
// with credentials redacted from their text and errors, and structured
// values (possibly a chart's values) left out.
func TestLogHandlerRedactsTextAndOmitsValues(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{Verbosity: 10})
	l := slog.New(newLogHandler(log, addon.DefaultRedact))
	l.With("release", "tke/mesh", "config", map[string]any{"dbUrl": "postgres://u@h"}).WithGroup("g").Warn("upgrade failed: password=hunter2",
		"error", errors.New(`template: token: "hunter3"`), "values", map[string]any{"apiKey": "hunter4"}, "revision", 3, "status", "failed")
	l.Debug("debug", "kv", slog.GroupValue(slog.String("secret", "hunter5")))
	out := strings.Join(lines, "\n")
	for _, secret := range []string{"hunter2", "hunter3", "hunter4", "hunter5", "postgres"} {
		assert.NotContains(t, out, secret)
	}
	for _, kept := range []string{"upgrade failed", "tke/mesh", `"revision"=3`, "failed", omitted, "[REDACTED]"} {
		assert.Contains(t, out, kept)
	}
	assert.True(t, newLogHandler(log, addon.DefaultRedact).Enabled(context.Background(), slog.LevelDebug))
}
