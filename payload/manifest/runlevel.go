package manifest

import (
	"cmp"
	"path"
	"slices"
	"strconv"
	"strings"
)

// ParseRunLevel reads the run level and component from a payload file name of the form
// "0000_<level>_<component>_<rest>", where the component is letters and digits in
// dash-separated words (the cluster-version operator's
// ^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_ without the regular expression). The
// level is a number: "0000_5_x_" and "0000_05_x_" are the same level 5 (the
// cluster-version operator compares the digits as strings and would keep them apart).
// ok is false when the name does not have that form or the level does not fit an int.
func ParseRunLevel(file string) (level int, component string, ok bool) {
	rest, found := strings.CutPrefix(path.Base(file), "0000_")
	if !found {
		return 0, "", false
	}
	digits, rest, found := strings.Cut(rest, "_")
	if !found || digits == "" || strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, "", false
	}
	component, _, found = strings.Cut(rest, "_")
	if !found || !validComponent(component) {
		return 0, "", false
	}
	level, err := strconv.Atoi(digits)
	if err != nil {
		return 0, "", false
	}
	return level, component, true
}

// validComponent reports whether s is one or more words of ASCII letters and digits
// joined by single dashes.
func validComponent(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// CompareFiles orders payload file names: names with a run level first, by level as a
// number and then by name; then names without a run level, by name.
func CompareFiles(a, b string) int {
	la, _, oka := ParseRunLevel(a)
	lb, _, okb := ParseRunLevel(b)
	switch {
	case oka && okb:
		if c := cmp.Compare(la, lb); c != 0 {
			return c
		}
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

// sortFiles sorts files in CompareFiles order.
func sortFiles(files []string) { slices.SortFunc(files, CompareFiles) }
