package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/converge-dev/converge"
)

func annotated(annotations map[string]string) *Manifest {
	obj := &unstructured.Unstructured{}
	obj.SetName("x")
	obj.SetAnnotations(annotations)
	return &Manifest{Object: obj}
}

// TestInclusion holds the cluster-version operator's inclusion rules (library-go's
// manifest.Include).
func TestInclusion(t *testing.T) {
	const ha = "include.release.openshift.io/self-managed-high-availability"
	tests := []struct {
		name        string
		rules       Inclusion
		annotations map[string]string
		want        string // "" when included
	}{
		{"no rules include everything", Inclusion{}, nil, ""},
		{"a rule and no annotations", Inclusion{Profile: "self-managed-high-availability"}, nil, "no annotations"},
		{"in the profile", Inclusion{Profile: "self-managed-high-availability"}, map[string]string{ha: "true"}, ""},
		{"not in the profile", Inclusion{Profile: "single-node-developer"}, map[string]string{ha: "true"}, "include.release.openshift.io/single-node-developer unset"},
		{"profile not true", Inclusion{Profile: "self-managed-high-availability"}, map[string]string{ha: "false"}, "unrecognized value " + ha + "=false"},
		{"excluded", Inclusion{ExcludeIdentifier: "hypershift"}, map[string]string{"exclude.release.openshift.io/hypershift": "true"}, "exclude.release.openshift.io/hypershift=true"},
		{"exclusion not true", Inclusion{ExcludeIdentifier: "hypershift"}, map[string]string{"exclude.release.openshift.io/hypershift": "false"}, ""},
		{"default feature set", Inclusion{CheckFeatureSet: true}, map[string]string{featureSetAnnotation: "Default,TechPreviewNoUpgrade"}, ""},
		{"other feature set", Inclusion{CheckFeatureSet: true}, map[string]string{featureSetAnnotation: "TechPreviewNoUpgrade"}, `"Default" is required, and release.openshift.io/feature-set=TechPreviewNoUpgrade`},
		{"unknown feature set", Inclusion{CheckFeatureSet: true, FeatureSet: "TechPreviewNoUpgrade"}, map[string]string{featureSetAnnotation: "Maybe"}, `unrecognized value "Maybe"`},
		{"no feature set annotation", Inclusion{CheckFeatureSet: true, FeatureSet: "TechPreviewNoUpgrade"}, map[string]string{ha: "true"}, ""},
		{"enabled capabilities", Inclusion{KnownCapabilities: []string{"A", "B"}, EnabledCapabilities: []string{"A", "B"}}, map[string]string{capabilityAnnotation: "A+B"}, ""},
		{"disabled capability", Inclusion{KnownCapabilities: []string{"A", "B"}, EnabledCapabilities: []string{"A"}}, map[string]string{capabilityAnnotation: "A+B"}, "disabled capabilities: B"},
		{"unknown capability", Inclusion{KnownCapabilities: []string{"A"}, EnabledCapabilities: []string{"A"}}, map[string]string{capabilityAnnotation: "A+Z"}, "unrecognized capability names: Z"},
		{"no capability annotation", Inclusion{KnownCapabilities: []string{"A"}}, map[string]string{ha: "true"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rules.Include(annotated(tt.annotations))
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
	assert.ErrorIs(t, Inclusion{}.Include(nil), converge.ErrInvalid)
}
