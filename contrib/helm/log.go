package helmconverge

import (
	"context"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
)

// omitted replaces a structured value (a map, a struct: possibly values)
// in Helm's log records.
const omitted = "[omitted]"

// logHandler sends Helm's log records to the call's logger (at V(2), named
// "helm"), with their message and every text or error value redacted and
// every structured value omitted: Helm's records may carry a chart's values.
type logHandler struct {
	next   slog.Handler
	redact func(string) string
}

func newLogHandler(log logr.Logger, redact func(string) string) slog.Handler {
	return &logHandler{next: logr.ToSlogHandler(log.V(2).WithName("helm")), redact: redact}
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.clean(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.clean(a)
	}
	return &logHandler{next: h.next.WithAttrs(clean), redact: h.redact}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: h.next.WithGroup(name), redact: h.redact}
}

// clean redacts the value of a credential's key, a text or an error, omits
// a structured value and keeps the rest (numbers, booleans, times).
func (h *logHandler) clean(a slog.Attr) slog.Attr {
	if probe := a.Key + "=value"; h.redact(probe) != probe {
		// A credential's key: whatever its value, it is one, replaced as
		// the redactor replaces one.
		marker, ok := strings.CutPrefix(h.redact(probe), a.Key+"=")
		if !ok {
			marker = omitted
		}
		return slog.String(a.Key, marker)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.clean(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.redact(x.Error()))
		}
		return slog.String(a.Key, omitted)
	}
	return slog.Attr{Key: a.Key, Value: v}
}
