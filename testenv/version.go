package testenv

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// kubernetesModule is the module the build module pins kube-apiserver's
// version by.
const kubernetesModule = "k8s.io/kubernetes"

// versionPackages hold the variables a Kubernetes binary reports its version
// from (/version, kubectl version); Kubernetes' hack/lib/version.sh sets
// them in both with -X at link time. A binary built with plain go build
// reports v0.0.0-master+$Format:%H$, which a chart's kubeVersion constraint
// and a client that checks the server's version refuse.
var versionPackages = []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"}

// pinnedKubernetes returns the version of k8s.io/kubernetes the build
// module's go.mod requires.
func pinnedKubernetes() (string, error) {
	b, err := toolsFS.ReadFile("tools/go.mod.txt")
	if err != nil {
		return "", fmt.Errorf("testenv: build module: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == kubernetesModule {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("testenv: build module: go.mod requires no %s", kubernetesModule)
}

// apiserverLdflags returns the linker flags that make kube-apiserver report
// the pinned Kubernetes version, as hack/lib/version.sh sets them for a
// release: gitVersion (v1.37.2), gitMajor and gitMinor (1, 37), gitTreeState
// clean (the module's source is the tagged tree, verified by go.sum) and
// buildDate; gitCommit stays unset, as the module proxy does not say it.
// The version key hashes these flags with an empty buildDate.
func apiserverLdflags(buildDate string) (string, error) {
	pinned, err := pinnedKubernetes()
	if err != nil {
		return "", err
	}
	v, err := version.ParseSemantic(pinned)
	if err != nil {
		return "", fmt.Errorf("testenv: build module: %s %s: %w", kubernetesModule, pinned, err)
	}
	vars := []struct{ name, value string }{
		{"gitVersion", pinned},
		{"gitMajor", fmt.Sprint(v.Major())},
		{"gitMinor", fmt.Sprint(v.Minor())},
		{"gitTreeState", "clean"},
		{"buildDate", buildDate},
	}
	flags := []string{"-s", "-w"}
	for _, pkg := range versionPackages {
		for _, kv := range vars {
			flags = append(flags, "-X", pkg+"."+kv.name+"="+kv.value)
		}
	}
	return strings.Join(flags, " "), nil
}

// buildDate is the time of a build as the version reports it, in
// hack/lib/version.sh's format.
func buildDate(now time.Time) string {
	return now.UTC().Format("2006-01-02T15:04:05Z")
}
