//go:build librarygobench

package librarygobench

import (
	"sync"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/klog/v2"
)

// logs holds what library-go logs: the benchmark lines stay parseable, and a
// benchmark fails if a steady-state sync logs.
var logs logBuffer

func TestMain(m *testing.M) {
	klog.LogToStderr(false)
	klog.SetOutput(&logs)
	goleak.VerifyTestMain(m)
}

type logBuffer struct {
	mu   sync.Mutex
	last []byte
	n    int
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n += len(p)
	l.last = append(l.last[:0], p...)
	return len(p), nil
}

// written is how many bytes have been logged so far and the last line.
func (l *logBuffer) written() (int, string) {
	klog.Flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, string(l.last)
}
