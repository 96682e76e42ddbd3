package crconverge

import (
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
)

// selection is the set of objects of its kind a configured controller
// owns: those in one of its namespaces (any namespace when there are none)
// whose labels its selector matches (every object when it is nil).
type selection struct {
	namespaces []string
	selector   labels.Selector
}

// checkSelection checks a controller's namespaces and selector for objects
// of prototype's kind, which c says is namespaced or not, and returns the
// selection with what is wrong with it. A nil slice is a selector (labels'
// NewSelector, which matches everything); a nil pointer is not.
func checkSelection(c client.Client, prototype client.Object, namespaces []string, selector labels.Selector) (selection, []string) {
	var problems []string
	if v := reflect.ValueOf(selector); selector != nil && v.Kind() == reflect.Pointer && v.IsNil() {
		problems = append(problems, fmt.Sprintf("Selector holds a nil %T", selector))
	}
	if slices.Contains(namespaces, "") {
		problems = append(problems, `Namespaces holds "" (no namespaces select every one)`)
	}
	if len(namespaces) > 0 && !check.IsNil(c) && !check.IsNil(prototype) {
		if namespaced, err := c.IsObjectNamespaced(prototype); err == nil && !namespaced {
			problems = append(problems, "Namespaces would select none of a cluster-scoped kind")
		}
	}
	return selection{namespaces: slices.Clone(namespaces), selector: selector}, problems
}

// owns reports whether obj is one of the selection's objects.
func (s selection) owns(obj client.Object) bool {
	if len(s.namespaces) > 0 && !slices.Contains(s.namespaces, obj.GetNamespace()) {
		return false
	}
	return s.selector == nil || s.selector.Matches(labels.Set(obj.GetLabels()))
}

// predicate passes the events of the selection's objects only.
func (s selection) predicate() predicate.Predicate { return predicate.NewPredicateFuncs(s.owns) }
