package rollout

import "strconv"

// Installer identifies one installer pod: the attempt to install Revision on Node.
// +kubebuilder:object:generate=true
type Installer struct {
	// Name is the pod name, see InstallerName.
	Name string `json:"name"`
	// Node is the node the installer runs on.
	Node string `json:"node"`
	// Revision is the revision it installs.
	Revision int32 `json:"revision"`
}

// InstallerName names the installer for a node's current target and attempt,
// as library-go does: "installer-<rev>-<node>" for the first attempt and
// "installer-<rev>-retry-<n>-<node>" for a retry after n recorded failures
// and fallbacks of that revision. It returns "" when the node targets
// nothing.
func InstallerName(n NodeStatus) string {
	if n.TargetRevision == 0 {
		return ""
	}
	rev := strconv.FormatInt(int64(n.TargetRevision), 10)
	if retries := int64(n.LastFailedCount) + int64(n.LastFallbackCount); n.LastFailedRevision == n.TargetRevision && retries > 0 {
		return "installer-" + rev + "-retry-" + strconv.FormatInt(retries, 10) + "-" + n.NodeName
	}
	return "installer-" + rev + "-" + n.NodeName
}

// installerFor returns the installer for the node's current target and attempt.
func installerFor(n NodeStatus) Installer {
	return Installer{Node: n.NodeName, Revision: n.TargetRevision, Name: InstallerName(n)}
}
