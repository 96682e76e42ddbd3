package cli_test

import (
	"flag"
	"fmt"
	"os"

	"github.com/converge-dev/converge/internal/cli"
)

func Example() {
	fs := flag.NewFlagSet("staticpod-rollout", flag.ContinueOnError)
	nodes := fs.Int("nodes", 3, "number of nodes")
	fs.String("kubeconfig", "", "run on this cluster")
	fs.String("namespace", "default", "namespace (-kubeconfig only)")

	err := cli.Parse(fs, []string{"-nodes", "0"}, os.Stdout)
	if err == nil && *nodes < 1 {
		err = cli.Errorf("nodes", "%d is not at least 1", *nodes)
	}
	fmt.Println("exit status", cli.Exit(os.Stdout, fs.Name(), err))

	fs = flag.NewFlagSet("addon-lifecycle", flag.ContinueOnError)
	fs.String("kubeconfig", "", "run on this cluster")
	fs.String("namespace", "default", "namespace (-kubeconfig only)")
	err = cli.Parse(fs, []string{"-namespace", "fleet"}, os.Stdout)
	if err == nil {
		err = cli.Requires(fs, "kubeconfig", "namespace")
	}
	fmt.Println("exit status", cli.Exit(os.Stdout, fs.Name(), err))
	// Output:
	// staticpod-rollout: -nodes: 0 is not at least 1
	// exit status 2
	// addon-lifecycle: -namespace: needs -kubeconfig
	// exit status 2
}
