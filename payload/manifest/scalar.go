package manifest

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// endsLine reports whether rest is spaces, then a comment or nothing.
func endsLine(rest []byte) bool {
	t := bytes.TrimLeft(rest, " ")
	return len(t) == 0 || (t[0] == '#' && len(t) < len(rest))
}

// plainEnd cuts a plain scalar's line at its comment.
func plainEnd(line []byte) []byte {
	for i := 1; i < len(line); i++ {
		if line[i] == '#' && line[i-1] == ' ' {
			return line[:i]
		}
	}
	return line
}

// literal decodes a literal block scalar ("|", "|-", "|+") whose header is line, the
// value of a node of the collection at col: its lines are those more indented than
// col, at the indentation of the first of them.
func (d *blockDecoder) literal(col int, header []byte) (any, bool) {
	chomp := byte(0)
	h := header[1:]
	if len(h) > 0 && (h[0] == '-' || h[0] == '+') {
		chomp, h = h[0], h[1:]
	}
	if !endsLine(h) {
		return nil, false // an indentation indicator, or content after the header
	}
	d.skipLine()
	if d.pos == len(d.src) {
		return nil, false
	}
	d.pos++ // the header's line break
	d.line = d.pos
	var (
		b      strings.Builder
		indent = -1
		breaks int // line breaks not yet written
		lines  int
	)
	for d.pos < len(d.src) {
		end := bytes.IndexByte(d.src[d.pos:], '\n')
		if end < 0 {
			return nil, false // a last line without a line break
		}
		line := d.src[d.pos : d.pos+end]
		spaces := len(line) - len(bytes.TrimLeft(line, " "))
		blank := spaces == len(line)
		if indent < 0 && !blank {
			if spaces <= col {
				break // no content: the scalar is empty
			}
			indent = spaces
		}
		if blank {
			if indent >= 0 && spaces > indent || indent < 0 && spaces > col {
				return nil, false // spaces beyond the indentation on an empty line
			}
			breaks++
			d.pos += end + 1
			d.line = d.pos
			continue
		}
		if spaces < indent {
			break
		}
		if lines > 0 {
			breaks++
		}
		for range breaks {
			b.WriteByte('\n')
		}
		breaks = 0
		b.Write(line[indent:])
		lines++
		d.pos += end + 1
		d.line = d.pos
	}
	if lines == 0 {
		return nil, false
	}
	switch chomp {
	case 0:
		b.WriteByte('\n')
	case '+':
		for range breaks + 1 {
			b.WriteByte('\n')
		}
	}
	return b.String(), true
}

// unquote decodes the single- or double-quoted scalar that starts line and ends on
// it, and returns it and the length it took; ok is false for one that goes on to the
// next line or has an escape this decoder does not know.
func unquote(line []byte) (s string, n int, ok bool) {
	q := line[0]
	var b strings.Builder
	for i := 1; i < len(line); i++ {
		c := line[i]
		switch {
		case c == q && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == q:
			return b.String(), i + 1, true
		case c == '\\' && q == '"':
			if i+1 == len(line) {
				return "", 0, false
			}
			i++
			r, size, known := unescape(line[i:])
			if !known {
				return "", 0, false
			}
			b.WriteRune(r)
			i += size - 1
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// escapes are the escapes of double-quoted scalars the YAML 1.1 decoder knows, but for
// \x, \u and \U.
var escapes = map[byte]rune{'0': 0, 'a': '\a', 'b': '\b', 't': '\t', '\t': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r',
	'e': 0x1b, ' ': ' ', '"': '"', '\'': '\'', '\\': '\\', 'N': 0x85, '_': 0xa0, 'L': 0x2028, 'P': 0x2029}

// hexEscapes are the number of hex digits of \x, \u and \U.
var hexEscapes = map[byte]int{'x': 2, 'u': 4, 'U': 8}

// unescape decodes the escape that esc starts (after the backslash) and returns its
// rune and its length.
func unescape(esc []byte) (r rune, n int, ok bool) {
	if r, ok := escapes[esc[0]]; ok {
		return r, 1, true
	}
	digits := hexEscapes[esc[0]]
	if digits == 0 || len(esc) < 1+digits {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(string(esc[1:1+digits]), 16, 32)
	if err != nil || (v >= 0xd800 && v <= 0xdfff) || v > utf8.MaxRune {
		return 0, 0, false
	}
	return rune(v), 1 + digits, true
}

// yaml11Words are the plain scalars YAML 1.1 resolves to a bool or null.
var yaml11Words = map[string]any{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "true": true, "True": true, "TRUE": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "false": false, "False": false, "FALSE": false, "off": false, "Off": false, "OFF": false,
	"~": nil, "null": nil, "Null": nil, "NULL": nil,
}

// resolvePlain resolves a plain scalar as the YAML 1.1 decoder sigs.k8s.io/yaml uses
// does, when the result is a string, a bool, null or a decimal integer (an int64, as
// the JSON round trip makes it); ok is false for anything else: a float, a
// timestamp, an integer in another base or beyond int64, a merge key.
func resolvePlain(raw []byte) (any, bool) {
	if v, ok := yaml11Words[string(raw)]; ok {
		return v, true
	}
	if plainString(raw) {
		return string(raw), true
	}
	if s := string(raw); decimal(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	return nil, false
}

// plainString reports whether the YAML 1.1 decoder resolves the plain scalar raw to a
// string.
func plainString(raw []byte) bool {
	if _, word := yaml11Words[string(raw)]; word {
		return false
	}
	switch c := raw[0]; {
	case c == '.' || c == '<':
		return false
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		s := string(raw)
		return !decimal(s) && stringAfterNumbers(s)
	}
	return true
}

// decimal reports whether s is an integer without a leading zero, sign plus or
// underscores: a number base 10 and base 0 read alike.
func decimal(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// stringAfterNumbers reports whether the YAML 1.1 decoder resolves s, which starts
// with a sign or a digit, to a string: it is no timestamp, integer of any base,
// unsigned integer or float, even with its underscores dropped.
func stringAfterNumbers(s string) bool {
	if len(s) > 4 && s[4] == '-' && strings.Trim(s[:4], "0123456789") == "" {
		return false // a date, perhaps
	}
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return false
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return false
	}
	if _, err := strconv.ParseFloat(plain, 64); err == nil {
		return false
	}
	return !strings.HasPrefix(plain, "0b") && !strings.HasPrefix(plain, "-0b")
}
