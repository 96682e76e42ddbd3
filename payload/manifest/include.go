package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/converge-dev/converge/internal/input"
)

// The annotations Inclusion reads, as the cluster-version operator names them.
const (
	// profileAnnotationPrefix + profile set to "true" includes a manifest in a cluster
	// profile, e.g. include.release.openshift.io/self-managed-high-availability.
	profileAnnotationPrefix = "include.release.openshift.io/"
	// excludeAnnotationPrefix + identifier set to "true" excludes a manifest.
	excludeAnnotationPrefix = "exclude.release.openshift.io/"
	// featureSetAnnotation lists, comma separated, the feature sets a manifest belongs to.
	featureSetAnnotation = "release.openshift.io/feature-set"
	// capabilityAnnotation lists, joined by "+", the capabilities a manifest belongs to.
	capabilityAnnotation = "capability.openshift.io/name"
)

// knownFeatureSets are the feature sets an annotation may name; "Default" stands for
// the empty feature set.
var knownFeatureSets = []string{"CustomNoUpgrade", "Default", "DevPreviewNoUpgrade", "TechPreviewNoUpgrade"}

// Inclusion decides which manifests of a payload belong to a cluster with the
// cluster-version operator's annotations (library-go's manifest.Include):
// include.release.openshift.io/<profile>, exclude.release.openshift.io/<identifier>,
// release.openshift.io/feature-set and capability.openshift.io/name. Every rule
// is optional; a manifest excluded by one is never applied nor counted. Plug it into
// the payload worker with payload.Config.Include: manifest.Inclusion{Profile: "…"}.Include.
type Inclusion struct {
	// ExcludeIdentifier, when set, excludes manifests annotated
	// exclude.release.openshift.io/<ExcludeIdentifier>: "true".
	ExcludeIdentifier string
	// Profile, when set, includes only manifests annotated
	// include.release.openshift.io/<Profile>: "true".
	Profile string
	// FeatureSet is the cluster's feature set ("" is Default), checked when
	// CheckFeatureSet is set.
	FeatureSet string
	// CheckFeatureSet includes a manifest annotated release.openshift.io/feature-set
	// only when the annotation lists FeatureSet, and excludes one that lists an unknown
	// feature set.
	CheckFeatureSet bool
	// KnownCapabilities, when not nil, includes a manifest only when every capability
	// its capability.openshift.io/name annotation lists ("+" separated) is known and in
	// EnabledCapabilities.
	KnownCapabilities []string
	// EnabledCapabilities are the capabilities enabled on the cluster.
	EnabledCapabilities []string
}

// Include returns nil when m belongs to the cluster, or an error that says which rule
// excludes it. As in library-go, a manifest without annotations is excluded as soon as
// a rule is set.
func (in Inclusion) Include(m *Manifest) error {
	if m == nil || m.Object == nil {
		return input.Invalidf("manifest", "manifest", "nil, or without an object")
	}
	if in.ExcludeIdentifier == "" && in.Profile == "" && !in.CheckFeatureSet && in.KnownCapabilities == nil {
		return nil
	}
	annotations := m.Object.GetAnnotations()
	if len(annotations) == 0 {
		return errors.New("no annotations")
	}
	if in.ExcludeIdentifier != "" {
		key := excludeAnnotationPrefix + in.ExcludeIdentifier
		if v := annotations[key]; v == "true" {
			return fmt.Errorf("%s=%s", key, v)
		}
	}
	if in.CheckFeatureSet {
		if err := checkFeatureSet(in.FeatureSet, annotations); err != nil {
			return err
		}
	}
	if in.Profile != "" {
		key := profileAnnotationPrefix + in.Profile
		v, ok := annotations[key]
		switch {
		case !ok:
			return fmt.Errorf("%s unset", key)
		case v != "true":
			return fmt.Errorf("unrecognized value %s=%s", key, v)
		}
	}
	if in.KnownCapabilities != nil {
		return checkCapabilities(annotations[capabilityAnnotation], in.KnownCapabilities, in.EnabledCapabilities)
	}
	return nil
}

func checkFeatureSet(featureSet string, annotations map[string]string) error {
	value, ok := annotations[featureSetAnnotation]
	if !ok {
		return nil
	}
	if featureSet == "" {
		featureSet = "Default"
	}
	sets := strings.Split(value, ",")
	for _, s := range sets {
		if !slices.Contains(knownFeatureSets, s) {
			return fmt.Errorf("unrecognized value %q in %s=%s", s, featureSetAnnotation, value)
		}
	}
	if !slices.Contains(sets, featureSet) {
		return fmt.Errorf("%q is required, and %s=%s", featureSet, featureSetAnnotation, value)
	}
	return nil
}

func checkCapabilities(value string, known, enabled []string) error {
	if value == "" {
		return nil
	}
	var unknown, disabled []string
	for _, c := range strings.Split(value, "+") {
		switch {
		case !slices.Contains(known, c):
			unknown = append(unknown, c)
		case !slices.Contains(enabled, c):
			disabled = append(disabled, c)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unrecognized capability names: %s", strings.Join(unknown, ", "))
	}
	if len(disabled) > 0 {
		return fmt.Errorf("disabled capabilities: %s", strings.Join(disabled, ", "))
	}
	return nil
}
