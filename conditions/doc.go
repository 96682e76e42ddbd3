// Package conditions sets, orders, combines and summarises status conditions
// on []metav1.Condition, with the time always supplied by the caller.
package conditions
