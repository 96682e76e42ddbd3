package conditions

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestJoinBounded(t *testing.T) {
	tests := []struct {
		name  string
		items []string
		sep   string
		max   int
		want  string
	}{
		{name: "nothing", items: nil, sep: ", ", max: 10, want: ""},
		{name: "everything fits", items: []string{"a", "b", "c"}, sep: ", ", max: 7, want: "a, b, c"},
		{name: "the first items that fit, then how many are left out", items: []string{"node-1", "node-2", "node-3", "node-4"}, sep: ", ", max: 29, want: "node-1, … and 3 more"},
		{name: "room is kept for the count", items: []string{"aaaaaaaa", "bbbbbbbb", "cccccccc"}, sep: ",", max: 24, want: "aaaaaaaa,… and 2 more"},
		{name: "a first item too long alone is cut with an ellipsis", items: []string{strings.Repeat("x", 40), "y"}, sep: "\n", max: 30, want: strings.Repeat("x", 12) + "…\n… and 1 more"},
		{name: "a single item too long is cut", items: []string{"abcdefghij"}, sep: ",", max: 8, want: "abcde…"},
		{name: "a limit smaller than the ellipsis cuts the join", items: []string{"abcdef", "ghi"}, sep: ",", max: 2, want: "ab"},
		{name: "zero means the API limit", items: []string{"a", "b"}, sep: ",", max: 0, want: "a,b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := JoinBounded(tt.items, tt.sep, tt.max)
			assert.Equal(t, tt.want, got)
			limit := tt.max
			if limit <= 0 {
				limit = MaxMessageLength
			}
			assert.LessOrEqual(t, len(got), limit)
		})
	}
}

func TestJoinBoundedNeverSplitsARune(t *testing.T) {
	items := []string{strings.Repeat("ü", 50), "tail"}
	for max := 1; max <= 120; max++ {
		got := JoinBounded(items, " ", max)
		assert.True(t, utf8.ValidString(got), "max %d: %q", max, got)
		assert.LessOrEqual(t, len(got), max)
	}
}

func TestJoinBoundedKeepsTheAPILimitForThousandsOfItems(t *testing.T) {
	items := make([]string, 1500)
	for i := range items {
		items[i] = "node-" + strings.Repeat("n", 30) + "-" + string(rune('a'+i%26))
	}
	got := JoinBounded(items, ", ", 0)
	assert.LessOrEqual(t, len(got), MaxMessageLength)
	assert.True(t, strings.HasSuffix(got, " more"), got[len(got)-40:])
	assert.True(t, strings.HasPrefix(got, items[0]+", "+items[1]))
}

func TestTruncateMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		max  int
		want string
	}{
		{name: "a message that fits is kept", msg: "line 1\nline 2", max: 20, want: "line 1\nline 2"},
		{name: "whole lines are kept, then a count of the rest", msg: "line 1\nline 2\nline 3\nline 4", max: 26, want: "line 1\n… and 3 more"},
		{name: "one long line is cut with an ellipsis", msg: strings.Repeat("e", 100), max: 10, want: strings.Repeat("e", 7) + "…"},
		{name: "above the API limit means the API limit", msg: "short", max: MaxMessageLength + 1, want: "short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, TruncateMessage(tt.msg, tt.max))
		})
	}
}

func TestSanitizeReason(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{in: "AsExpected", want: "AsExpected"},
		{in: "Foo_Crashing::Bar_Slow", want: "Foo_Crashing::Bar_Slow"},
		{in: "image pull failed", want: "ImagePullFailed"},
		{in: "helm.sh/release", want: "HelmShRelease"},
		{in: "example.com/Foo", want: "ExampleComFoo"},
		{in: "404 not found", want: "NotFound"},
		{in: "ends with colon:", want: "EndsWithColon"},
		{in: "ÜberFailed", want: "BerFailed"},
		{in: "", want: ""},
		{in: "123 !!", want: ""},
		{in: strings.Repeat("ab ", 1000), want: strings.Repeat("Ab", 512)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := SanitizeReason(tt.in)
			assert.Equal(t, tt.want, got)
			if got != "" {
				assert.NoError(t, Validate(cond("Ready", False, got, "")))
			}
		})
	}
}

func FuzzSanitizeReasonIsValid(f *testing.F) {
	for _, s := range []string{"image pull failed", "a:", "9x", "x,y", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SanitizeReason(s)
		if got == "" {
			return
		}
		if err := Validate(cond("Ready", False, got, "")); err != nil {
			t.Fatalf("SanitizeReason(%q) = %q: %v", s, got, err)
		}
	})
}
