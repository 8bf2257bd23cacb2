// Command ql3-control is not built yet: this stub only reports that, so nobody
// mistakes it for a working binary. Its issue replaces it.
package main

import (
	"fmt"
	"os"
)

var version = "dev"

func main() {
	fmt.Fprintf(os.Stderr, "ql3-control %s: not implemented yet (see the open issues)\n", version)
	os.Exit(2)
}
