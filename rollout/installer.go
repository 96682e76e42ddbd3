package rollout

import "fmt"

// Installer identifies one installer pod: the attempt to install Revision on Node.
type Installer struct {
	// Node is the node the installer runs on.
	Node string
	// Revision is the revision it installs.
	Revision int32
	// Name is the pod name, see InstallerName.
	Name string
}

// InstallerName names the installer for a node's current target and attempt:
// "installer-<rev>-<node>" for the first attempt and
// "installer-<rev>-retry-<n>-<node>" for the n-th retry after n recorded
// failures of that revision. It returns "" when the node targets nothing.
func InstallerName(n NodeStatus) string {
	if n.TargetRevision == 0 {
		return ""
	}
	if n.LastFailedRevision == n.TargetRevision && n.LastFailedCount > 0 {
		return fmt.Sprintf("installer-%d-retry-%d-%s", n.TargetRevision, n.LastFailedCount, n.NodeName)
	}
	return fmt.Sprintf("installer-%d-%s", n.TargetRevision, n.NodeName)
}

// installerFor returns the installer for the node's current target and attempt.
func installerFor(n NodeStatus) Installer {
	return Installer{Node: n.NodeName, Revision: n.TargetRevision, Name: InstallerName(n)}
}
