package payloadapply

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
)

// Progress prints the worker's statuses as one line rewritten in place on a terminal,
// one line per change otherwise, and other lines around it.
type Progress struct {
	mu   sync.Mutex
	out  io.Writer
	live bool
	last string
}

// NewProgress prints to out, in place when out is a terminal.
func NewProgress(out io.Writer) *Progress {
	live := false
	if f, ok := out.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			live = true
		}
	}
	return &Progress{out: out, live: live}
}

// Show prints s, with level the run level being applied. A status that counts no
// manifest yet says its release is loading; the run level shows only while updating,
// the one state that applies the run levels in order.
func (p *Progress) Show(s payload.Status, level int64) {
	line := fmt.Sprintf("progress: %2d/%d manifests, %s", s.Done, s.Total, s.State)
	switch {
	case s.Total == 0:
		line = fmt.Sprintf("progress: loading release %s, %s", s.Release, s.State)
	case s.State == payload.StateUpdating:
		line += fmt.Sprintf(", run level %02d", level)
	}
	if s.Failure != nil {
		line += ", failing: " + s.Failure.Reason
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if line == p.last {
		return
	}
	p.last = line
	if p.live {
		fmt.Fprintf(p.out, "\r%-90s", line)
		return
	}
	fmt.Fprintln(p.out, line)
}

// Println prints one line.
func (p *Progress) Println(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.last != "" {
		fmt.Fprintln(p.out)
		p.last = ""
	}
	fmt.Fprintf(p.out, format+"\n", args...)
}

// Events prints the worker's events, one line each.
func (p *Progress) Events(events []converge.Event) {
	for _, e := range events {
		p.Println("event: %s %s: %s", e.Type, e.Reason, e.Message)
	}
}

// count is n and noun, plural unless n is 1: "1 time", "2 times".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
