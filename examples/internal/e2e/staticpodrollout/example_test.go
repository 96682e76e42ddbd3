package staticpodrollout_test

import (
	"fmt"

	"github.com/converge-dev/converge/examples/internal/e2e/staticpodrollout"
)

// The limits left zero scale with the nodes, so that -nodes 10000 runs
// without raising any of them; one that is hit names its flag.
func ExampleConfig_Scaled() {
	c := staticpodrollout.Config{Nodes: 10000}.Scaled()
	fmt.Println("-max-unavailable", c.MaxUnavailable)
	fmt.Println("-max-syncs", c.MaxSyncs)
	fmt.Println("-timeout", c.Timeout)
	// Output:
	// -max-unavailable 100
	// -max-syncs 5100
	// -timeout 2h56m40s
}
