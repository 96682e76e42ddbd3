package conditions

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ellipsis ends an item or a list that was cut short.
const ellipsis = "…"

// TruncateMessage bounds msg to max bytes, so that a message built from
// unbounded input (errors, node names) is one the API server accepts. A max
// of zero or less, or above MaxMessageLength, means MaxMessageLength. A
// message that fits is returned as it is. Otherwise its lines are treated as
// items of JoinBounded: the first lines that fit are kept, followed by a line
// "… and N more"; a single line is cut on a rune boundary and ends with "…".
func TruncateMessage(msg string, max int) string {
	max = messageLimit(max)
	if len(msg) <= max {
		return msg
	}
	return JoinBounded(strings.Split(msg, "\n"), "\n", max)
}

// JoinBounded joins items with sep, like strings.Join, into at most max bytes
// (zero or less, or above MaxMessageLength, means MaxMessageLength). When the
// items do not all fit it keeps the first ones that do and ends with
// sep + "… and N more", N counting the items left out. A first item too long
// even alone is cut on a rune boundary and ends with "…". The result is valid
// UTF-8 when the items are.
func JoinBounded(items []string, sep string, max int) string {
	max = messageLimit(max)
	total := len(sep) * max0(len(items)-1)
	for _, it := range items {
		total += len(it)
	}
	if total <= max {
		return strings.Join(items, sep)
	}
	var b strings.Builder
	b.Grow(max)
	kept := 0
	for i, it := range items {
		n := len(it)
		if i > 0 {
			n += len(sep)
		}
		if left := len(items) - i - 1; left > 0 {
			n += len(sep) + len(more(left))
		}
		if b.Len()+n > max {
			break
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(it)
		kept++
	}
	if kept == 0 {
		room := max - len(ellipsis)
		if len(items) > 1 {
			room -= len(sep) + len(more(len(items)-1))
		}
		if room <= 0 {
			return cutRunes(strings.Join(items, sep), max)
		}
		b.WriteString(cutRunes(items[0], room))
		b.WriteString(ellipsis)
		kept = 1
	}
	if left := len(items) - kept; left > 0 {
		b.WriteString(sep)
		b.WriteString(more(left))
	}
	return b.String()
}

func more(n int) string { return ellipsis + " and " + strconv.Itoa(n) + " more" }

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

func messageLimit(max int) int {
	if max <= 0 || max > MaxMessageLength {
		return MaxMessageLength
	}
	return max
}

// cutRunes returns the longest prefix of s of at most max bytes that does not
// split a UTF-8 sequence.
func cutRunes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// SanitizeReason turns any text (an error code, "image pull failed",
// "helm.sh/release") into a reason the API server accepts: the runs of
// ASCII letters and digits of s, each starting with an upper-case letter,
// joined ("ImagePullFailed", "HelmShRelease"), without leading digits, at
// most MaxReasonLength bytes. A reason that is already valid is returned
// unchanged. Text with no ASCII letter gives "".
func SanitizeReason(s string) string {
	if len(s) <= MaxReasonLength && validReason(s) {
		return s
	}
	var b strings.Builder
	upper := true
	for i := 0; i < len(s) && b.Len() < MaxReasonLength; i++ {
		c := s[i]
		switch {
		case !isAlnum(c):
			upper = true
			continue
		case b.Len() == 0 && !isLetter(c):
			continue
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		upper = false
		b.WriteByte(c)
	}
	return b.String()
}
