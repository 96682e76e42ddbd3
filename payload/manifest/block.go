package manifest

import (
	"bytes"
	"unicode/utf8"
)

// decodeBlock decodes a YAML document written in the block style manifests use into
// the object sigs.k8s.io/yaml would give (YAMLToJSON, then JSON into a map), reading
// it once: block mappings and sequences, plain scalars on one line that resolve to a
// string, a decimal integer, a bool or null as YAML 1.1 says, quoted scalars on one
// line, literal block scalars, empty flow collections and comments. ok is false for a
// document with anything else (floats, timestamps, folded or multi-line scalars,
// flow collections, anchors, tags, keys that are not strings or repeat, a document
// that is not a mapping, invalid YAML): the caller decodes it with the library, which
// gives its own result or error. empty is true for a document of comments alone.
func decodeBlock(doc []byte) (object map[string]any, empty, ok bool) {
	if !printable(doc) {
		return nil, false, false
	}
	d := blockDecoder{src: doc}
	col, found := d.next()
	if !found {
		return nil, true, true
	}
	if d.sequenceEntry() || !d.keyAhead() {
		return nil, false, false
	}
	object, ok = d.mapping(col)
	if _, more := d.next(); !ok || more {
		return nil, false, false
	}
	return object, false, true
}

// printable reports whether doc is UTF-8 of the characters YAML allows, with lines
// ended by \n alone, without tabs (which YAML takes as white space in some places and
// refuses in others) and without a byte-order mark.
func printable(doc []byte) bool {
	for i := 0; i < len(doc); {
		c := doc[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == 0xfeff, r < 0xa0 && r != 0x85, r > 0xd7ff && r < 0xe000, r > 0xfffd && r < 0x10000:
			return false
		}
		i += size
	}
	return true
}

// blockDecoder reads a document: pos is the next byte to read, line the start of the
// line it is on.
type blockDecoder struct {
	src  []byte
	pos  int
	line int
}

// next moves to the next content, past spaces, empty lines and comments, and returns
// its column; found is false at the end of the document.
func (d *blockDecoder) next() (col int, found bool) {
	for d.pos < len(d.src) {
		switch c := d.src[d.pos]; {
		case c == ' ':
			d.pos++
		case c == '\n':
			d.pos++
			d.line = d.pos
		case c == '#' && (d.pos == d.line || d.src[d.pos-1] == ' '):
			d.skipLine()
		default:
			return d.pos - d.line, true
		}
	}
	return 0, false
}

// skipLine moves to the end of the line.
func (d *blockDecoder) skipLine() {
	if i := bytes.IndexByte(d.src[d.pos:], '\n'); i >= 0 {
		d.pos += i
	} else {
		d.pos = len(d.src)
	}
}

// rest is what is left of the line from pos.
func (d *blockDecoder) rest() []byte {
	end := bytes.IndexByte(d.src[d.pos:], '\n')
	if end < 0 {
		return d.src[d.pos:]
	}
	return d.src[d.pos : d.pos+end]
}

// plainContent reports whether the content at pos is not a document marker at the
// start of a line.
func (d *blockDecoder) plainContent() bool {
	rest := d.rest()
	return d.pos != d.line || !(bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("...")))
}

// sequenceEntry reports whether the content at pos is "-" followed by a space or the
// end of the line.
func (d *blockDecoder) sequenceEntry() bool {
	return d.src[d.pos] == '-' && (d.pos+1 == len(d.src) || d.src[d.pos+1] == ' ' || d.src[d.pos+1] == '\n')
}

// keyAhead reports whether the content at pos starts with a key: a plain or quoted
// scalar followed by ": " or a ':' that ends the line.
func (d *blockDecoder) keyAhead() bool {
	_, _, ok := d.peekKey()
	return ok
}

// peekKey reads the key at pos without moving: the key and the position after its ':'.
func (d *blockDecoder) peekKey() (key string, after int, ok bool) {
	rest := d.rest()
	if len(rest) == 0 || !d.plainContent() {
		return "", 0, false
	}
	var end int // of the key, before the ':' and the spaces before it
	switch rest[0] {
	case '"', '\'':
		value, n, quoted := unquote(rest)
		if !quoted {
			return "", 0, false
		}
		i := n
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		if i == len(rest) || rest[i] != ':' || (i+1 < len(rest) && rest[i+1] != ' ') {
			return "", 0, false
		}
		key, end = value, i
	default:
		i := indexMappingColon(rest)
		if i <= 0 {
			return "", 0, false
		}
		raw := bytes.TrimRight(rest[:i], " ")
		if len(raw) == 0 || !plainStart(raw) || len(raw) > 1000 || !plainString(raw) {
			return "", 0, false
		}
		key, end = string(raw), i
	}
	return key, d.pos + end + 1, true
}

// indexMappingColon returns the index of the ':' that ends a plain key on line (one
// followed by a space or the end of the line), -1 when there is none before a comment.
func indexMappingColon(line []byte) int {
	for i, c := range line {
		switch {
		case c == ':' && (i+1 == len(line) || line[i+1] == ' '):
			return i
		case c == '#' && i > 0 && line[i-1] == ' ':
			return -1
		}
	}
	return -1
}

// plainStart reports whether s may start a plain scalar in block style: not an
// indicator, except '-' before a character that is not a space.
func plainStart(s []byte) bool {
	switch s[0] {
	case '-':
		return len(s) > 1 && s[1] != ' '
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		return false
	}
	return true
}

// mapping decodes the block mapping whose keys are at col.
func (d *blockDecoder) mapping(col int) (map[string]any, bool) {
	m := make(map[string]any, d.keysAt(col))
	for {
		at, found := d.next()
		if !found || at < col {
			return m, true
		}
		if at > col || d.sequenceEntry() {
			return nil, false
		}
		key, after, ok := d.peekKey()
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		d.pos = after
		value, ok := d.value(col)
		if !ok {
			return nil, false
		}
		m[key] = value
	}
}

// keysAt counts, from the content at pos, the lines that start at col until one
// starts before it: the keys of the mapping there, or a few more, so that its map is
// made once, at its size.
func (d *blockDecoder) keysAt(col int) int {
	n := 1
	i := bytes.IndexByte(d.src[d.pos:], '\n')
	for i >= 0 {
		start := d.pos + i + 1
		end := bytes.IndexByte(d.src[start:], '\n')
		line := d.src[start:]
		if end >= 0 {
			line = line[:end]
		}
		content := bytes.TrimLeft(line, " ")
		switch spaces := len(line) - len(content); {
		case len(content) == 0 || content[0] == '#':
		case spaces < col:
			return n
		case spaces == col:
			n++
		}
		if end < 0 {
			break
		}
		i += 1 + end
	}
	return n
}

// value decodes the value of a key of the mapping at col, from just after its ':'.
func (d *blockDecoder) value(col int) (any, bool) {
	for d.pos < len(d.src) && d.src[d.pos] == ' ' {
		d.pos++
	}
	if d.pos < len(d.src) && d.src[d.pos] != '\n' && d.src[d.pos] != '#' {
		return d.inline(col)
	}
	d.skipLine()
	at, found := d.next()
	switch {
	case !found || at < col:
		return nil, true
	case at == col && d.sequenceEntry():
		return d.sequence(col)
	case at == col:
		return nil, true // the next key
	case d.sequenceEntry():
		return d.sequence(at)
	case d.keyAhead():
		return d.mapping(at)
	}
	return nil, false // a scalar on a line of its own
}

// sequence decodes the block sequence whose entries are at col.
func (d *blockDecoder) sequence(col int) ([]any, bool) {
	items := []any{}
	for {
		at, found := d.next()
		if !found || at < col {
			return items, true
		}
		if at > col {
			return nil, false
		}
		if !d.sequenceEntry() {
			return items, true // a key of the mapping the sequence is the value of
		}
		d.pos++
		for d.pos < len(d.src) && d.src[d.pos] == ' ' {
			d.pos++
		}
		var (
			item any
			ok   bool
		)
		if d.pos == len(d.src) || d.src[d.pos] == '\n' || d.src[d.pos] == '#' {
			d.skipLine()
			next, found := d.next()
			switch {
			case !found || next <= col:
				item, ok = nil, true
			case d.sequenceEntry():
				item, ok = d.sequence(next)
			case d.keyAhead():
				item, ok = d.mapping(next)
			}
		} else {
			at := d.pos - d.line
			switch {
			case d.sequenceEntry():
				item, ok = d.sequence(at)
			case d.keyAhead():
				item, ok = d.mapping(at)
			default:
				item, ok = d.inline(col)
			}
		}
		if !ok {
			return nil, false
		}
		items = append(items, item)
	}
}

// inline decodes a scalar, a literal block scalar or an empty flow collection that
// starts at pos, the value of a node of the collection at col; the next content must
// not be more indented than col, as it would continue the scalar.
func (d *blockDecoder) inline(col int) (any, bool) {
	rest := d.rest()
	var value any
	switch rest[0] {
	case '|':
		return d.literal(col, rest)
	case '"', '\'':
		s, n, ok := unquote(rest)
		if !ok || !endsLine(rest[n:]) {
			return nil, false
		}
		value = s
	case '[', '{':
		switch t := bytes.TrimRight(rest, " "); {
		case bytes.HasPrefix(t, []byte("[]")) && endsLine(t[2:]):
			value = []any{}
		case bytes.HasPrefix(t, []byte("{}")) && endsLine(t[2:]):
			value = map[string]any{}
		default:
			return nil, false
		}
	default:
		raw := bytes.TrimRight(plainEnd(rest), " ")
		if !plainStart(raw) || indexMappingColon(raw) >= 0 {
			return nil, false
		}
		v, ok := resolvePlain(raw)
		if !ok {
			return nil, false
		}
		value = v
	}
	d.skipLine()
	if at, found := d.next(); found && at > col {
		return nil, false
	}
	return value, true
}
