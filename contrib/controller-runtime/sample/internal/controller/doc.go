// Package controller holds the sample operator's reconcilers, one per engine.
package controller
