package kube

import (
	"embed"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/converge-dev/converge/internal/input"
)

//go:embed rbac/*.yaml
var rbacFiles embed.FS

// RBAC returns the ClusterRole that an engine's adapters in this package
// need ("rollout", "addon" or "payload"), as shipped in kube/rbac/<engine>.yaml:
// apply it as it is, or copy its rules into your operator's role. The addon
// role names an example.com/addons resource to replace with yours, and the
// rollout role the finalizers of an example.com/rollouts owner (for
// RolloutPodsConfig.Owner) to replace with your owner's; the payload role
// lists the kinds of a typical payload to extend with yours.
func RBAC(engine string) (*rbacv1.ClusterRole, error) {
	b, err := rbacFiles.ReadFile("rbac/" + engine + ".yaml")
	if err != nil {
		return nil, input.Invalidf("kube", "engine", "no RBAC for engine %q", engine)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, role); err != nil {
		return nil, fmt.Errorf("kube: rbac/%s.yaml: %w", engine, err)
	}
	return role, nil
}
