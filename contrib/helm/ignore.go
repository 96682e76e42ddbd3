package helmconverge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// IgnoreRule names fields that drift detection ignores, as Flux's
// helm-controller's driftDetection.ignore: JSON pointers (RFC 6901, "~1"
// for a "/" in a key, "~0" for a "~") into every object of the release of
// Kind (every kind when empty) and Name (every name when empty). A
// Deployment whose replicas an HPA owns is ignored with
//
//	IgnoreRule{Kind: "Deployment", Paths: []string{"/spec/replicas"}}
//
// The paths are removed from both the object the chart applies and the
// object in the cluster before they are compared, so neither what the chart
// sets there nor what another writer set is drift. A path the object does
// not have removes nothing. A drift correction re-applies the whole chart,
// ignored fields included.
type IgnoreRule struct {
	// Paths are the JSON pointers of the ignored fields.
	Paths []string `json:"paths"`
	// Kind is the kind of the objects the rule covers; empty: every kind.
	Kind string `json:"kind,omitempty"`
	// Name is the name of the objects the rule covers; empty: every name.
	Name string `json:"name,omitempty"`
}

// covers reports whether the rule applies to obj.
func (r IgnoreRule) covers(obj *unstructured.Unstructured) bool {
	return (r.Kind == "" || r.Kind == obj.GetKind()) && (r.Name == "" || r.Name == obj.GetName())
}

// ignoredFields holds the parsed pointers of a chart's ignore rules.
type ignoredFields []parsedRule

type parsedRule struct {
	rule   IgnoreRule
	tokens [][]string
}

// parseIgnoreRules checks every rule's pointers; the problems name the rule
// and the pointer.
func parseIgnoreRules(rules []IgnoreRule) (ignoredFields, []string) {
	var out ignoredFields
	var problems []string
	for i, r := range rules {
		p := parsedRule{rule: r}
		if len(r.Paths) == 0 {
			problems = append(problems, fmt.Sprintf("drift ignore rule %d has no paths", i))
		}
		for _, path := range r.Paths {
			toks, err := pointerTokens(path)
			if err != nil {
				problems = append(problems, fmt.Sprintf("drift ignore rule %d: %v", i, err))
				continue
			}
			p.tokens = append(p.tokens, toks)
		}
		out = append(out, p)
	}
	return out, problems
}

// strip removes from obj every field a rule covering it ignores.
func (f ignoredFields) strip(obj *unstructured.Unstructured) {
	for _, p := range f {
		if !p.rule.covers(obj) {
			continue
		}
		for _, toks := range p.tokens {
			removeAt(obj.Object, toks)
		}
	}
}

// pointerTokens parses an RFC 6901 JSON pointer into its unescaped
// reference tokens. The root pointer "" names the whole object, which no
// rule may ignore.
func pointerTokens(pointer string) ([]string, error) {
	if !strings.HasPrefix(pointer, "/") {
		return nil, fmt.Errorf("JSON pointer %q does not start with /", pointer)
	}
	toks := strings.Split(pointer[1:], "/")
	for i, t := range toks {
		if strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(t), "~") {
			return nil, fmt.Errorf("JSON pointer %q has a ~ that is not ~0 or ~1", pointer)
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// removeAt removes the value at toks below v and returns v: a map loses the
// key, a list the element; a path that is not there changes nothing.
func removeAt(v any, toks []string) any {
	switch x := v.(type) {
	case map[string]any:
		child, ok := x[toks[0]]
		switch {
		case !ok:
		case len(toks) == 1:
			delete(x, toks[0])
		default:
			x[toks[0]] = removeAt(child, toks[1:])
		}
		return x
	case []any:
		i, err := strconv.Atoi(toks[0])
		if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != toks[0] {
			return x
		}
		if len(toks) == 1 {
			return slices.Delete(x, i, i+1)
		}
		x[i] = removeAt(x[i], toks[1:])
		return x
	}
	return v
}
