package manifest_test

import (
	"fmt"
	"testing/fstest"

	"github.com/converge-dev/converge/payload/manifest"
)

// Load reads the files of a release in run-level order, one manifest per document,
// with the dependencies and deletions their annotations name.
func ExampleLoad() {
	manifests, err := manifest.Load(fstest.MapFS{
		"0000_20_web_00_deployment.yaml": {Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations:
    payload.converge.dev/depends-on: ConfigMap/shop/settings
`)},
		"0000_10_shop_00_config.yaml": {Data: []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy
  namespace: shop
  annotations:
    release.openshift.io/delete: "true"
`)},
	}, manifest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range manifests {
		p := m.Place()
		fmt.Printf("%s#%d %s level %d %s, depends on %v, delete %t\n", m.File, m.Document, m.Ref(), p.RunLevel, p.Component, m.DependsOn, m.Delete)
	}
	// Output:
	// 0000_10_shop_00_config.yaml#1 Namespace/shop level 10 shop, depends on [], delete false
	// 0000_10_shop_00_config.yaml#2 ConfigMap/shop/settings level 10 shop, depends on [], delete false
	// 0000_10_shop_00_config.yaml#3 ConfigMap/shop/legacy level 10 shop, depends on [], delete true
	// 0000_20_web_00_deployment.yaml#1 Deployment/shop/web level 20 web, depends on [ConfigMap/shop/settings], delete false
}

// A document Load cannot read is a *LoadError naming its file and its place in it.
func ExampleLoadError() {
	_, err := manifest.Load(fstest.MapFS{
		"0000_10_shop_00_config.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n---\napiVersion: v1\nmetadata:\n  name: settings\n")},
	}, manifest.Options{})
	fmt.Println(err)
	// Output: manifest: file "0000_10_shop_00_config.yaml" document 2: object has no kind
}

// Inclusion ships the cluster-version operator's annotations; plug its Include into
// payload.Config.Include.
func ExampleInclusion_Include() {
	manifests, _ := manifest.Load(fstest.MapFS{"0000_50_console_00_cm.yaml": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: console
  namespace: openshift-console
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    capability.openshift.io/name: Console
    release.openshift.io/feature-set: Default,TechPreviewNoUpgrade
`)}}, manifest.Options{})
	console := &manifests[0]
	rules := manifest.Inclusion{
		Profile:             "self-managed-high-availability",
		CheckFeatureSet:     true,
		KnownCapabilities:   []string{"Console", "Insights"},
		EnabledCapabilities: []string{"Console"},
	}
	fmt.Println(rules.Include(console))
	rules.EnabledCapabilities = nil
	fmt.Println(rules.Include(console))
	rules = manifest.Inclusion{Profile: "single-node-developer"}
	fmt.Println(rules.Include(console))
	// Output:
	// <nil>
	// disabled capabilities: Console
	// include.release.openshift.io/single-node-developer unset
}

// ParseRunLevel reads a file's run level and component as the cluster-version
// operator does, the level as a number.
func ExampleParseRunLevel() {
	for _, file := range []string{"0000_50_console-operator_03_deployment.yaml", "0000_5_x_y.yaml", "crd.yaml"} {
		fmt.Println(manifest.ParseRunLevel(file))
	}
	// Output:
	// 50 console-operator true
	// 5 x true
	// 0  false
}
