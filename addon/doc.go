// Package addon runs an add-on's lifecycle as a phase transition table with a retry and remediation policy.
package addon
