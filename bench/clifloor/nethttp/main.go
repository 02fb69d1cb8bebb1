// Command nethttp is a Go program that links an HTTP client and does
// nothing else: a floor for bench/clistart.sh (see package clifloor).
package main

import (
	"net/http"
	"os"
)

func main() {
	if len(os.Args) > 1 { // never in the benchmark: keeps the client linked
		_, _ = http.Get(os.Args[1])
	}
	os.Stdout.WriteString("nethttp\n")
}
